# The connection manager examples of rdmacm-utils: rping, ucmatose, udaddy,
# mckey and cmtime, their man pages, and the VM test that compares them
# with Debian's. Included by CMakeLists.txt in this directory.

find_package(Threads REQUIRED)

# Event channel creation, address lookup and small owners shared by the five.
add_library(rdmacm_cm_examples STATIC cm_common.cpp)
target_link_libraries(rdmacm_cm_examples PUBLIC rdmacm ibverbs)

rdma_executable(rping rping.cpp)
target_link_libraries(rping PRIVATE rdmacm_cm_examples rdmacm ibverbs Threads::Threads)

# Installed as ucmatose, as in rdma-core.
rdma_executable(ucmatose cmatose.cpp)
target_link_libraries(ucmatose PRIVATE rdmacm_cm_examples rdmacm ibverbs)

rdma_executable(udaddy udaddy.cpp)
target_link_libraries(udaddy PRIVATE rdmacm_cm_examples rdmacm ibverbs)

rdma_executable(mckey mckey.cpp)
target_link_libraries(mckey PRIVATE rdmacm_cm_examples rdmacm ibverbs Threads::Threads)

rdma_executable(cmtime cmtime.cpp)
target_link_libraries(cmtime PRIVATE rdmacm_cm_examples rdmacm ibverbs Threads::Threads)

rdma_man_pages(
  ../man/rping.1.md
  ../man/ucmatose.1.md
  ../man/udaddy.1.md
  ../man/mckey.1.md
  ../man/cmtime.1.md)

# In the soft-RoCE VM: each program against Debian's rdmacm-utils in both
# roles, Debian's programs on our librdmacm, and the error cases; skipped
# (77) where rdmacm-utils is not installed. 10 to 17 minutes in a TCG VM
# on a loaded host: some 300 program runs, each a few seconds there (mckey
# waits 3 s more by design); hence the pingpong-like limit.
if(COMMAND rdma_vm_test)
  rdma_vm_test(NAME rdmacm_cm_compat LANE cm TIMEOUT 1800
    COMMAND ${CMAKE_SOURCE_DIR}/tests/compat/rdmacm-cm-compat.sh
      /usr/bin $<TARGET_FILE_DIR:rping> --test-libs $<TARGET_FILE_DIR:rdmacm>)
endif()
