# The executable's export list: the functions of the FFI contract
# (server/lua/ffi.h), which lua/moonport/core/ finds through ffi.C, and
# nothing else. Every other symbol stays inside the binary: a Lua C module
# an app loads (lua-cjson's cjson.so) takes the Lua C API from
# libluajit-5.1.so, which the executable links, not from the executable.
#
# mp_ffi_exports(target header) reads the contract's declarations from
# header (comments dropped: every "mp_name(" left is a function), writes
# them as a linker dynamic list, and links target with it. Each name is also
# required to be defined, so a contract function that no source defines, or
# that sits unreferenced in a static library, fails the link instead of the
# first Lua call. Editing the header configures again.
function(mp_ffi_exports target header)
  file(READ ${header} text)
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" "" text "${text}")
  string(REGEX MATCHALL "mp_[a-z0-9_]+[ \t\n]*\\(" calls "${text}")
  set(names "")
  foreach(call ${calls})
    string(REGEX REPLACE "[ \t\n]*\\($" "" name "${call}")
    list(APPEND names ${name})
  endforeach()
  list(REMOVE_DUPLICATES names)
  if(NOT names)
    message(FATAL_ERROR "${header}: no function of the FFI contract found")
  endif()
  set(list_file ${CMAKE_CURRENT_BINARY_DIR}/${target}.exports)
  list(JOIN names ";\n  " body)
  file(CONFIGURE OUTPUT ${list_file} CONTENT "{\n  ${body};\n};\n")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${header})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${list_file})
  target_link_options(${target} PRIVATE "LINKER:--dynamic-list=${list_file}")
  foreach(name ${names})
    target_link_options(${target} PRIVATE "LINKER:--require-defined=${name}")
  endforeach()
endfunction()
