-- Digests, HMAC, base64 and CRC-32 (lua/moonport/core/crypto.lua, on
-- server/lua/ffi/crypto.c) against the published test vectors: RFC 1321
-- (MD5), RFC 3174 and FIPS 180-2 (SHA-1, SHA-256), RFC 2202 (HMAC-SHA1),
-- RFC 4231 (HMAC-SHA256), RFC 4648 (base64), and CRC-32's check value.
require("spec.support.ffi_unit")
local crypto = require("moonport.core.crypto")

local hex = crypto.hex

local function unhex(s)
  return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end))
end

describe("moonport.core.crypto", function()
  it("computes MD5 as RFC 1321's test suite", function()
    local vectors = {
      [""] = "d41d8cd98f00b204e9800998ecf8427e",
      a = "0cc175b9c0f1b6a831c399e269772661",
      abc = "900150983cd24fb0d6963f7d28e17f72",
      ["message digest"] = "f96b697d7cb7938d525a2f31aaf161d0",
      abcdefghijklmnopqrstuvwxyz = "c3fcd3d76192e4007dfb496cca67e13b",
      ["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"] =
        "d174ab98d277d9f5a5611c2c9f419d9f",
      [("1234567890"):rep(8)] = "57edf4a22be3c955ac49da2e2107b67a",
    }
    for input, digest in pairs(vectors) do
      assert.equal(digest, hex(crypto.digest("md5", input)), input)
    end
  end)

  it("computes SHA-1 and SHA-256 as RFC 3174 and FIPS 180-2", function()
    local two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
    assert.equal("a9993e364706816aba3e25717850c26c9cd0d89d", hex(crypto.digest("sha1", "abc")))
    assert.equal("84983e441c3bd26ebaae4aa1f95129e5e54670f1", hex(crypto.digest("sha1", two_blocks)))
    assert.equal("34aa973cd4c4daa4f61eeb2bdbad27316534016f",
      hex(crypto.digest("sha1", ("a"):rep(1000000))))
    assert.equal("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      hex(crypto.digest("sha256", "abc")))
    assert.equal("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
      hex(crypto.digest("sha256", two_blocks)))
    assert.equal("23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7",
      hex(crypto.digest("sha224", "abc")))
    assert.equal("cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
      .. "8086072ba1e7cc2358baeca134c825a7", hex(crypto.digest("sha384", "abc")))
    assert.equal("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
      .. "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
      hex(crypto.digest("sha512", "abc")))
  end)

  it("computes HMAC-SHA1 as RFC 2202 and HMAC-SHA256 as RFC 4231", function()
    assert.equal("b617318655057264e28bc0b6fb378c8ef146be00",
      hex(crypto.hmac("sha1", ("\11"):rep(20), "Hi There")))
    assert.equal("effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
      hex(crypto.hmac("sha1", "Jefe", "what do ya want for nothing?")))
    assert.equal("125d7342b9ac11cd91a39af48aa17b4f63f175d3",
      hex(crypto.hmac("sha1", ("\170"):rep(20), ("\221"):rep(50))))
    -- A key longer than a block is hashed first.
    assert.equal("aa4ae5e15272d00e95705637ce8a3b55ed402112",
      hex(crypto.hmac("sha1", ("\170"):rep(80),
        "Test Using Larger Than Block-Size Key - Hash Key First")))
    assert.equal("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
      hex(crypto.hmac("sha256", ("\11"):rep(20), "Hi There")))
    assert.equal("fbdb1d1b18aa6c08324b7d64b71fb76370690e1d", hex(crypto.hmac("sha1", "", "")))
  end)

  it("encodes base64 as RFC 4648, with and without padding, and URL-safe", function()
    local vectors = { [""] = "", f = "Zg==", fo = "Zm8=", foo = "Zm9v", foob = "Zm9vYg==",
                      fooba = "Zm9vYmE=", foobar = "Zm9vYmFy" }
    for input, text in pairs(vectors) do
      assert.equal(text, crypto.base64_encode(input), input)
      assert.equal((text:gsub("=", "")), crypto.base64_encode(input, true), input)
      assert.equal(input, crypto.base64_decode(text), text)
    end
    assert.equal("-_8=", crypto.base64_encode("\251\255", false, true))
    assert.equal("+/8=", crypto.base64_encode("\251\255"))
    assert.equal("\251\255", crypto.base64_decode("-_8", true))
    local all = {}
    for b = 0, 255 do all[#all + 1] = string.char(b) end
    all = table.concat(all):rep(300)
    assert.equal(all, crypto.base64_decode(crypto.base64_encode(all)))
  end)

  it("decodes base64 as nginx: padding optional, nothing read after the first '='", function()
    assert.equal("fo", crypto.base64_decode("Zm8"))
    assert.equal("f", crypto.base64_decode("Zg"))
    assert.equal("fo", crypto.base64_decode("Zm8=garbage!"))
    assert.is_nil(crypto.base64_decode("Zm9vY"))   -- one digit past a group
    assert.is_nil(crypto.base64_decode("Zm9v!"))
    assert.is_nil(crypto.base64_decode("Zm 9v"))
    assert.is_nil(crypto.base64_decode("-_8="))    -- URL digits in standard base64
  end)

  it("computes CRC-32 as zlib, whose check value for \"123456789\" is cbf43926", function()
    assert.equal(0xcbf43926, crypto.crc32("123456789"))
    assert.equal(0, crypto.crc32(""))
    assert.equal(907060870, crypto.crc32("hello"))
  end)

  it("keeps running digests, which refuse updates after final until reset", function()
    local d = assert(crypto.new("sha1"))
    assert.is_true(d:update("ab"))
    assert.is_true(d:update("c"))
    assert.equal("a9993e364706816aba3e25717850c26c9cd0d89d", hex(d:final()))
    assert.is_false(d:update("x"))
    assert.is_nil(d:final())
    assert.is_true(d:reset())
    d:update("")
    assert.equal("da39a3ee5e6b4b0d3255bfef95601890afd80709", hex(d:final()))
    local m = crypto.new("md5")
    for _ = 1, 8 do m:update("1234567890") end
    assert.equal("57edf4a22be3c955ac49da2e2107b67a", hex(m:final()))
  end)

  it("writes hex and reads it back", function()
    assert.equal("00ff10", hex("\0\255\16"))
    assert.equal("", hex(""))
    local long = ("\1\171"):rep(40000)
    assert.equal(long, unhex(hex(long)))
  end)

  it("raises for an unknown algorithm", function()
    assert.has_error(function() crypto.digest("md4", "x") end, "digest: unknown algorithm 'md4'")
    assert.has_error(function() crypto.new("whirlpool") end, "digest: unknown algorithm 'whirlpool'")
  end)
end)
