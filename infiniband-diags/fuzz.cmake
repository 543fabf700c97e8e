# Fuzzers of the text files every diag reads: ibdiag.conf and node name
# maps (rdma_fuzzer: corpus replay here, libFuzzer in the fuzz build).
# Included by infiniband-diags/CMakeLists.txt.
rdma_fuzzer(NAME ibdiag_conf SOURCES tests/fuzz_ibdiag_conf.cpp LIBS ibdiags_common
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/tests/corpus/ibdiag_conf)
rdma_fuzzer(NAME node_name_map SOURCES tests/fuzz_node_name_map.cpp LIBS ibdiags_common
  CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/tests/corpus/node_name_map)
foreach(f ibdiag_conf node_name_map)
  if(TARGET fuzz_replay_${f})
    target_include_directories(fuzz_replay_${f} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests)
  endif()
  if(TARGET fuzz_${f})
    target_include_directories(fuzz_${f} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests)
  endif()
endforeach()
