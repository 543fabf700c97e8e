# Included by examples/CMakeLists.txt: rdma_server, rdma_client,
# rdma_xserver, rdma_xclient (rdma_cm endpoints and the rdma_verbs.h
# helpers), rcopy, rstream, riostream (rsockets), their man pages and the
# compatibility test against Debian's rdmacm-utils.

# Helpers of these seven programs: the rsockets/kernel socket switch, the
# result table, the listen/connect steps, RAII owners of rdma_cm objects.
add_library(rdmacm_stream_common STATIC stream_common.cpp)
target_link_libraries(rdmacm_stream_common PUBLIC rdmacm ibverbs)

# rcopy, rstream and riostream need rsockets in librdmacm (rsocket.cmake
# lists their sources); without them only the rdma_cm programs are built.
set(stream_programs rdma_server rdma_client rdma_xserver rdma_xclient)
if(RDMACM_RSOCKET_SOURCES)
  list(APPEND stream_programs rcopy rstream riostream)
endif()
foreach(program IN LISTS stream_programs)
  rdma_executable(${program} ${program}.cpp)
  target_link_libraries(${program} PRIVATE rdmacm_stream_common rdmacm ibverbs)
endforeach()

rdma_man_pages(
  ../man/rdma_server.1.md
  ../man/rdma_client.1.md
  ../man/rdma_xserver.1.md
  ../man/rdma_xclient.1.md
  ../man/rcopy.1.md
  ../man/rstream.1.md
  ../man/riostream.1.md)

# In the soft-RoCE VM: each program against Debian's, both ways, and
# Debian's programs on our librdmacm + libibverbs, compared with Debian's
# on Debian's libraries (timing figures masked); skipped (77) where
# rdmacm-utils is not installed. About 8 minutes in a TCG VM on a busy
# host (some 150 cases, 700 program runs), hence the limit.
if(COMMAND rdma_vm_test)
  string(REPLACE ";" " " stream_program_words "${stream_programs}")
  rdma_vm_test(NAME rdmacm_stream_compat LANE cm TIMEOUT 1200
    COMMAND ${CMAKE_SOURCE_DIR}/tests/compat/rdmacm-stream-compat.sh
      --programs "${stream_program_words}"
      /usr/bin $<TARGET_FILE_DIR:rdma_server> --test-libs $<TARGET_FILE_DIR:rdmacm>)
endif()

# udpong: the datagram ping-pong over datagram rsockets (or kernel UDP).
if(RDMACM_RSOCKET_SOURCES)
  rdma_executable(udpong udpong.cpp)
  target_link_libraries(udpong PRIVATE rdmacm_stream_common rdmacm ibverbs)
  rdma_man_pages(../man/udpong.1.md)
endif()
