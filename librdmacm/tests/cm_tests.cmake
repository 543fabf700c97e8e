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
  rdma_vm_test(NAME librdmacm_cm TIMEOUT 600 COMMAND $<TARGET_FILE:librdmacm_cm_tests>)
endif()

find_library(RDMA_REF_RDMACM NAMES librdmacm.so.1 PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} NO_DEFAULT_PATH)
find_library(RDMA_REF_IBVERBS NAMES libibverbs.so.1 PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} NO_DEFAULT_PATH)
if(RDMA_REF_RDMACM AND RDMA_REF_IBVERBS AND EXISTS /usr/include/rdma/rdma_cma.h)
  add_executable(librdmacm_cm_tests_reference cm_kernel_test.cpp)
  # System headers and libraries only: this binary is the reference run.
  target_link_libraries(librdmacm_cm_tests_reference PRIVATE
    ${RDMA_REF_RDMACM} ${RDMA_REF_IBVERBS} GTest::gtest_main Threads::Threads)
  if(COMMAND rdma_vm_test)
    rdma_vm_test(NAME librdmacm_cm_reference TIMEOUT 600
      COMMAND $<TARGET_FILE:librdmacm_cm_tests_reference>)
  endif()
endif()
