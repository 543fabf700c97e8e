# Fuzzers of what libibverbs parses from outside (rdma_fuzzer: corpus
# replay here, libFuzzer in the fuzz build): RDMA netlink replies
# (corpus/netlink_reply/ written by gen_netlink_corpus.cpp) and the
# libibverbs.d driver files. Included by tests/CMakeLists.txt.
# The parsers' sources are built into the fuzzers: the library does not
# export its internals.
rdma_fuzzer(NAME netlink_reply
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_netlink_reply.cpp ${CMAKE_SOURCE_DIR}/libibverbs/netlink.cpp
  LIBS ibverbs_headers rdma_util PkgConfig::NL3
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/netlink_reply)
rdma_fuzzer(NAME driver_file
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/fuzz_driver_file.cpp ${CMAKE_SOURCE_DIR}/libibverbs/driver_file.cpp
  LIBS ibverbs_headers rdma_util
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus/driver_file)
