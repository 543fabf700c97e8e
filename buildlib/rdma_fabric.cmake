# rdma_fabric_test(NAME n [TOPO file] [SM] [TIMEOUT s] COMMAND cmd args...)
# registers ctest test fabric.<n>: tests/fabric/fabric-run starts ibsim on
# TOPO (a path, a name under tests/fabric/topo, or one of Debian's
# net-examples; default net.2sw2path4hca), opensm too with SM, and runs the
# command in its work directory. The command sees IBSIM_SOCKNAME,
# SIM_PRELOAD, FABRIC_DIR, FABRIC_CTL, FABRIC_TOPO (see fabric-run) and
# RDMA_BUILD (the build tree).
function(rdma_fabric_test)
  cmake_parse_arguments(F "SM" "NAME;TOPO;TIMEOUT" "COMMAND" ${ARGN})
  set(args)
  if(F_TOPO)
    list(APPEND args --topo ${F_TOPO})
  endif()
  if(F_SM)
    list(APPEND args --sm)
  endif()
  if(NOT F_TIMEOUT)
    set(F_TIMEOUT 300)
  endif()
  add_test(NAME fabric.${F_NAME}
    COMMAND ${PROJECT_SOURCE_DIR}/tests/fabric/fabric-run ${args} -- ${F_COMMAND})
  set_tests_properties(fabric.${F_NAME} PROPERTIES
    TIMEOUT ${F_TIMEOUT} LABELS fabric
    ENVIRONMENT "RDMA_BUILD=${CMAKE_BINARY_DIR};RDMA_SOURCE=${PROJECT_SOURCE_DIR}")
endfunction()
