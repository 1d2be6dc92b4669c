# Installing moonport (cmake --install build [--prefix P]) and its Debian
# package (cpack -G DEB, in the build folder). Included by CMakeLists.txt.
#
# Under the prefix: bin/moonport; the Lua library in share/lua/5.1/moonport/,
# where the binary finds it relative to itself (server/lua/vm.c), so a tree
# installed anywhere, or unpacked from the package anywhere, works; the
# resty.* modules OpenResty's libraries require in share/moonport/lua/resty/,
# beside Debian's lua-resty-core and lua-resty-lrucache rather than over
# them; moonport(1) in share/man/man1/; the example apps in
# share/doc/moonport/examples/.
#
# The component `service` holds what only the package installs, at absolute
# paths: the systemd unit, /etc/moonport/app.lua (scripts/api.lua), the
# unit's options in /etc/default/moonport and the logrotate configuration.
# A plain cmake --install leaves it out.

install(TARGETS moonport RUNTIME DESTINATION bin)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/lua/moonport DESTINATION share/lua/5.1)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/lua/resty DESTINATION share/moonport/lua)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/scripts/
  DESTINATION share/doc/moonport/examples)

set(MOONPORT_MAN ${CMAKE_BINARY_DIR}/moonport.1)
add_custom_command(OUTPUT ${MOONPORT_MAN} ${MOONPORT_MAN}.gz
  COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:moonport> -DOUT=${MOONPORT_MAN}
    -P ${CMAKE_SOURCE_DIR}/server/dist/man.cmake
  DEPENDS moonport ${CMAKE_SOURCE_DIR}/server/dist/man.cmake
  COMMENT "Making moonport(1) from moonport --help-man"
  VERBATIM)
add_custom_target(moonport_man ALL DEPENDS ${MOONPORT_MAN}.gz)
install(FILES ${MOONPORT_MAN}.gz DESTINATION share/man/man1)

set(dist ${CMAKE_SOURCE_DIR}/server/dist)
install(FILES ${dist}/moonport.service DESTINATION /lib/systemd/system
  COMPONENT service EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/scripts/api.lua DESTINATION /etc/moonport
  RENAME app.lua COMPONENT service EXCLUDE_FROM_ALL)
install(FILES ${dist}/default DESTINATION /etc/default RENAME moonport
  COMPONENT service EXCLUDE_FROM_ALL)
install(FILES ${dist}/logrotate DESTINATION /etc/logrotate.d RENAME moonport
  COMPONENT service EXCLUDE_FROM_ALL)

set(MOONPORT_DEB_MAINTAINER "moonport maintainers <moonport@localhost>"
  CACHE STRING "the Maintainer field of the Debian package")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME moonport)
set(CPACK_PACKAGE_CONTACT "${MOONPORT_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Lua-scriptable HTTP/1.1 server")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "An HTTP/1.1 application server whose route handlers are Lua scripts run
by LuaJIT in a libuv event loop, with master and worker processes, hot
reload and a WireMock-compatible mock server. The package runs
/etc/moonport/app.lua as the systemd service moonport.service.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION httpd)
# Depends: the packages of the shared libraries the binary links
# (dpkg-shlibdeps), and adduser for the postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS logrotate)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${dist}/debian/postinst ${dist}/debian/prerm ${dist}/debian/postrm
  ${dist}/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
# Both components, in the one package.
set(CPACK_INSTALL_CMAKE_PROJECTS
  "${CMAKE_BINARY_DIR};moonport;Unspecified;/"
  "${CMAKE_BINARY_DIR};moonport;service;/")
include(CPack)
