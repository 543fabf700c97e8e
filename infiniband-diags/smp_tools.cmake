# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The local-port and SMP tools: ibstat, ibaddr, smpquery, smpdump, sminfo,
# ibportstate, ibroute, dump_fts; ibstatus is a script.
foreach(tool ibstat ibaddr smpquery smpdump sminfo ibportstate ibroute dump_fts)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${tool}.cpp)
    rdma_sbin_executable(${tool} ${tool}.cpp)
    target_link_libraries(${tool} PRIVATE ibdiags_common)
  endif()
endforeach()
