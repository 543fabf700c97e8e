# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The SA, performance, vendor and congestion-control tools: saquery,
# perfquery, ibtracert, ibping, ibsysstat, vendstat, ibccquery, ibccconfig.
# Included by infiniband-diags/CMakeLists.txt.
foreach(tool saquery perfquery ibtracert ibping ibsysstat vendstat ibccquery ibccconfig)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${tool}.cpp)
    rdma_sbin_executable(${tool} ${tool}.cpp)
    target_link_libraries(${tool} PRIVATE ibdiags_common ibmad ibumad)
  endif()
endforeach()

set(sa_tools_pages)
foreach(page saquery perfquery ibtracert ibping ibsysstat vendstat ibccquery ibccconfig)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/man/${page}.8.md)
    list(APPEND sa_tools_pages man/${page}.8.md)
  endif()
endforeach()
if(sa_tools_pages)
  rdma_man_pages(${sa_tools_pages})
endif()

# Ours against the reference on simulated fabrics (tests/compare-sa.sh).
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-sa.sh)
  rdma_fabric_test(NAME sa_tools.net2sw COMMAND
    ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-sa.sh TIMEOUT 900)
  rdma_fabric_test(NAME sa_tools.net2sw_sm SM COMMAND
    ${CMAKE_CURRENT_SOURCE_DIR}/tests/compare-sa.sh TIMEOUT 1800)
endif()
