# The connection manager in the soft-RoCE VM. One source, two binaries: on
# our librdmacm and on Debian's (when librdmacm-dev is installed); both must
# pass, which keeps the expectations honest.
if(NOT GTest_FOUND)
  return()
endif()
find_package(Threads REQUIRED)

add_executable(librdmacm_cm_tests cm_kernel_test.cpp)
target_link_libraries(librdmacm_cm_tests PRIVATE rdmacm ibverbs GTest::gtest_main Threads::Threads)
add_dependencies(librdmacm_cm_tests rxe-rdmav${IBVERBS_PABI_VERSION})
if(COMMAND rdma_vm_test)
  rdma_vm_test(NAME librdmacm_cm LANE cm TIMEOUT 600 COMMAND $<TARGET_FILE:librdmacm_cm_tests>)
endif()

find_library(RDMA_REF_RDMACM NAMES librdmacm.so.1 PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} NO_DEFAULT_PATH)
find_library(RDMA_REF_IBVERBS NAMES libibverbs.so.1 PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} NO_DEFAULT_PATH)
if(RDMA_REF_RDMACM AND RDMA_REF_IBVERBS AND EXISTS /usr/include/rdma/rdma_cma.h)
  add_executable(librdmacm_cm_tests_reference cm_kernel_test.cpp)
  # System headers and libraries only: this binary is the reference run.
  target_link_libraries(librdmacm_cm_tests_reference PRIVATE
    ${RDMA_REF_RDMACM} ${RDMA_REF_IBVERBS} GTest::gtest_main Threads::Threads)
  if(COMMAND rdma_vm_test)
    rdma_vm_test(NAME librdmacm_cm_reference LANE cm TIMEOUT 600
      COMMAND $<TARGET_FILE:librdmacm_cm_tests_reference>)
  endif()
endif()

# rdma_getaddrinfo on both libraries, with and without a (stand-in) ibacm.
add_executable(rdmacm_getaddrinfo_print getaddrinfo_print.c)
target_link_libraries(rdmacm_getaddrinfo_print PRIVATE rdmacm)
if(RDMA_REF_RDMACM AND EXISTS /usr/include/rdma/rdma_cma.h)
  add_executable(rdmacm_getaddrinfo_print_reference getaddrinfo_print.c)
  set_property(TARGET rdmacm_getaddrinfo_print_reference PROPERTY INCLUDE_DIRECTORIES "")
  target_link_libraries(rdmacm_getaddrinfo_print_reference PRIVATE ${RDMA_REF_RDMACM})
  set(ref_printer $<TARGET_FILE:rdmacm_getaddrinfo_print_reference>)
else()
  set(ref_printer /nonexistent)
endif()
# (alone: its stand-in ibacm owns /run/ibacm.sock for the whole VM, and
# every librdmacm running meanwhile, pyverbs' CMID tests in the main lane
# say, would ask it and get its answers)
if(COMMAND rdma_vm_test)
  rdma_vm_test(NAME rdmacm_getaddrinfo_compat LANE exclusive TIMEOUT 300
    COMMAND ${CMAKE_SOURCE_DIR}/tests/compat/rdmacm-getaddrinfo-compat.sh
      ${ref_printer} $<TARGET_FILE:rdmacm_getaddrinfo_print>)
endif()

# Unit tests (no kernel): the ibacm client's message encoding and decoding.
add_executable(librdmacm_unit_tests acm_test.cpp ${CMAKE_SOURCE_DIR}/librdmacm/acm.cpp)
target_include_directories(librdmacm_unit_tests PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(librdmacm_unit_tests PRIVATE rdmacm_headers rdma_util GTest::gtest_main)
add_test(NAME unit.librdmacm COMMAND librdmacm_unit_tests)

# A host without RDMA devices: the programs answer as Debian's do.
add_test(NAME compat.rdmacm_no_device
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/no_device_compat.sh ${CMAKE_BINARY_DIR})
set_tests_properties(compat.rdmacm_no_device PROPERTIES SKIP_RETURN_CODE 77)

# The same suite on the host, over the emulated rdma_cm of tests/uverbs-sim
# (src/ucma.cpp), on a RoCE port and on an InfiniBand port: Debian's
# librdmacm + libmlx5 judge the emulation, ours runs on it too.
if(EXISTS ${CMAKE_SOURCE_DIR}/tests/uverbs-sim/CMakeLists.txt)
  foreach(link roce ib)
    if(link STREQUAL "roce")
      set(cm_env "UVERBS_SIM_LINK=eth;CM_TEST_ADDR=10.79.0.1")
    else()
      set(cm_env "CM_TEST_ADDR=10.80.0.1")
    endif()
    set(cm_run ${CMAKE_CURRENT_BINARY_DIR}/uvsim-cm)
    add_test(NAME uvsim.ours.cm_suite_${link}
      COMMAND ${CMAKE_BINARY_DIR}/bin/uverbs-sim-run --dir ${cm_run}-ours-${link} $<TARGET_FILE:librdmacm_cm_tests>)
    set_tests_properties(uvsim.ours.cm_suite_${link} PROPERTIES TIMEOUT 300 LABELS "uvsim;uvsim-ours"
      ENVIRONMENT "${cm_env};CM_TEST_DEVICE=mlx5_0;LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/lib")
    if(TARGET librdmacm_cm_tests_reference)
      add_test(NAME uvsim.ref.cm_suite_${link}
        COMMAND ${CMAKE_BINARY_DIR}/bin/uverbs-sim-run --dir ${cm_run}-ref-${link}
                $<TARGET_FILE:librdmacm_cm_tests_reference>)
      set_tests_properties(uvsim.ref.cm_suite_${link} PROPERTIES TIMEOUT 300 LABELS "uvsim;uvsim-ref"
        ENVIRONMENT "${cm_env};CM_TEST_DEVICE=mlx5_0")
    endif()
  endforeach()
endif()
