# Allocation-failure sweeps over the exported functions (the C-entry barrier
# of util/c_entry.h): the program links rdma_alloc_fail and exports its
# operator new (ENABLE_EXPORTS), so librdmacm and libibverbs bind to it.
# One binary, two suites: Host (a fake sysfs rxe device, no kernel) and
# Kernel (rxe0 in the soft-RoCE VM).
if(NOT GTest_FOUND)
  return()
endif()
find_package(Threads REQUIRED)

add_executable(librdmacm_alloc_fail_tests alloc_fail_test.cpp)
target_include_directories(librdmacm_alloc_fail_tests PRIVATE ${CMAKE_SOURCE_DIR})
target_link_libraries(librdmacm_alloc_fail_tests PRIVATE
  rdmacm ibverbs rdma_alloc_fail GTest::gtest Threads::Threads)
set_target_properties(librdmacm_alloc_fail_tests PROPERTIES ENABLE_EXPORTS ON)
add_dependencies(librdmacm_alloc_fail_tests rxe-rdmav${IBVERBS_PABI_VERSION})
add_test(NAME unit.librdmacm_alloc_fail
  COMMAND librdmacm_alloc_fail_tests --fake-sysfs --gtest_filter=Host.*)
if(COMMAND rdma_vm_test)
  rdma_vm_test(NAME librdmacm_alloc_fail LANE cm TIMEOUT 900
    COMMAND $<TARGET_FILE:librdmacm_alloc_fail_tests> --gtest_filter=Kernel.*)
endif()
