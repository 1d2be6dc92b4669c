# Makes moonport(1) at build time: the binary prints its own manual page
# from its options table (moonport --help-man), so the page and --help
# cannot disagree; gzip'd as Debian ships manual pages.
#   cmake -DEXE=build/moonport -DOUT=build/moonport.1 -P server/dist/man.cmake
execute_process(COMMAND ${EXE} --help-man OUTPUT_FILE ${OUT}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} --help-man failed: ${rc}")
endif()
execute_process(COMMAND gzip -9 -n -c ${OUT} OUTPUT_FILE ${OUT}.gz
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gzip ${OUT} failed: ${rc}")
endif()
