# rsockets and librspreload: unit tests (no kernel) and soft-RoCE VM tests.
find_package(Threads REQUIRED)

# The plain-sockets echo pair librspreload must run unmodified.
add_executable(rsocket_tcp_echo rsocket_tcp_echo.c)
set_target_properties(rsocket_tcp_echo PROPERTIES C_EXTENSIONS ON)

if(GTest_FOUND)
  # Wire encodings, configuration files, the index table.
  add_executable(librdmacm_rsocket_unit_tests rsocket_unit_test.cpp
    ${CMAKE_SOURCE_DIR}/librdmacm/rsocket_config.cpp)
  target_include_directories(librdmacm_rsocket_unit_tests PRIVATE ${CMAKE_SOURCE_DIR})
  target_link_libraries(librdmacm_rsocket_unit_tests PRIVATE rdmacm_headers rdma_util GTest::gtest_main Threads::Threads)
  add_test(NAME unit.librdmacm_rsocket COMMAND librdmacm_rsocket_unit_tests)

  # Stream, datagram, polling, iomap and fault tests on rxe0; the binary is
  # also the peer process of the fault tests.
  add_executable(librdmacm_rsocket_tests rsocket_kernel_test.cpp)
  target_link_libraries(librdmacm_rsocket_tests PRIVATE rdmacm ibverbs GTest::gtest Threads::Threads)
  add_dependencies(librdmacm_rsocket_tests rxe-rdmav${IBVERBS_PABI_VERSION})
  if(COMMAND rdma_vm_test)
    rdma_vm_test(NAME librdmacm_rsocket LANE cm TIMEOUT 400 COMMAND $<TARGET_FILE:librdmacm_rsocket_tests>)
  endif()

  # The same tests on Debian's librdmacm keep the expectations honest.
  find_library(RSOCKET_REF_RDMACM NAMES librdmacm.so.1 PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} NO_DEFAULT_PATH)
  if(RSOCKET_REF_RDMACM AND EXISTS /usr/include/rdma/rsocket.h)
    add_executable(librdmacm_rsocket_tests_reference rsocket_kernel_test.cpp)
    target_compile_definitions(librdmacm_rsocket_tests_reference PRIVATE RSOCKET_TEST_REFERENCE)
    target_link_libraries(librdmacm_rsocket_tests_reference PRIVATE ${RSOCKET_REF_RDMACM} GTest::gtest Threads::Threads)
    if(COMMAND rdma_vm_test)
      rdma_vm_test(NAME librdmacm_rsocket_reference LANE cm TIMEOUT 400
        COMMAND $<TARGET_FILE:librdmacm_rsocket_tests_reference>)
    endif()
  endif()
endif()

if(COMMAND rdma_vm_test)
  # A plain TCP client/server pair over rsockets through LD_PRELOAD, also
  # across our preload library and Debian's.
  rdma_vm_test(NAME librdmacm_rsocket_preload LANE cm TIMEOUT 500
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/rsocket_preload.sh
      $<TARGET_FILE:rspreload> $<TARGET_FILE_DIR:rdmacm> $<TARGET_FILE:rsocket_tcp_echo>
      /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/rsocket/librspreload.so /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
  # Debian's rstream/riostream/udpong across the two librdmacm.
  rdma_vm_test(NAME librdmacm_rsocket_compat LANE cm TIMEOUT 1200
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/rsocket_compat.sh $<TARGET_FILE_DIR:rdmacm>
      /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
endif()
