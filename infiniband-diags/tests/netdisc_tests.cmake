# Fabric tests of the discovery tools and scripts (included from
# netdisc_tools.cmake): Debian's tools and ours on the same simulated
# fabric, compared by netdisc_compare.sh.
set(_cmp ${CMAKE_CURRENT_SOURCE_DIR}/tests/netdisc_compare.sh)
set(_cases ${CMAKE_CURRENT_SOURCE_DIR}/tests)

# A small fat tree for the tests (the benchmark makes its own big one).
set(_fattree ${CMAKE_CURRENT_BINARY_DIR}/fattree-small.topo)
execute_process(
  COMMAND python3 ${PROJECT_SOURCE_DIR}/tests/fabric/topo/gen-fattree.py
    --leaves 4 --spines 2 --hosts 4 --ports 8 --links 2
  OUTPUT_FILE ${_fattree} RESULT_VARIABLE _rc)

foreach(topo net net.1 net.2sw2path net.2sw2path4hca net.2sw2path4hca2port)
  string(REPLACE "." "_" t ${topo})
  rdma_fabric_test(NAME netdisc_basic_${t} TOPO ${topo} TIMEOUT 600
    COMMAND ${_cmp} ${_cases}/netdisc_basic.cases ${_cases}/scripts_basic.cases)
  rdma_fabric_test(NAME netdisc_basic_${t}_sm TOPO ${topo} SM TIMEOUT 600
    COMMAND ${_cmp} ${_cases}/netdisc_basic.cases ${_cases}/scripts_basic.cases)
endforeach()
if(_rc EQUAL 0)
  rdma_fabric_test(NAME netdisc_fattree TOPO ${_fattree} TIMEOUT 900
    COMMAND ${_cmp} ${_cases}/netdisc_basic.cases ${_cases}/scripts_basic.cases)
  rdma_fabric_test(NAME netdisc_fattree_sm TOPO ${_fattree} SM TIMEOUT 900
    COMMAND ${_cmp} ${_cases}/netdisc_basic.cases ${_cases}/scripts_basic.cases)
endif()
rdma_fabric_test(NAME netdisc_sm TOPO net.2sw2path4hca SM TIMEOUT 600
  COMMAND ${_cmp} ${_cases}/netdisc_sm.cases)
rdma_fabric_test(NAME netdisc_cache TOPO net.2sw2path4hca SM TIMEOUT 600
  COMMAND ${_cmp} ${_cases}/netdisc_cache.cases)
rdma_fabric_test(NAME scripts_perl TOPO net.2sw2path4hca SM TIMEOUT 600
  COMMAND ${_cmp} ${_cases}/scripts_perl.cases)
rdma_fabric_test(NAME netdisc_faults TOPO net.2sw2path4hca SM TIMEOUT 600
  COMMAND ${_cmp} ${_cases}/netdisc_faults.cases)
# libibnetdisc's test topologies: chassis grouping (Voltaire, Mellanox,
# Topspin, Xsigo; -g output, external port numbers) and link speeds/widths
# (extended speeds, FDR10, "Could be" hints).
foreach(t chassis speeds)
  set(_topo ${PROJECT_SOURCE_DIR}/libibnetdisc/tests/topo/${t}.topo)
  if(EXISTS ${_topo})
    rdma_fabric_test(NAME netdisc_basic_${t} TOPO ${_topo} TIMEOUT 600
      COMMAND ${_cmp} ${_cases}/netdisc_basic.cases ${_cases}/scripts_basic.cases)
    rdma_fabric_test(NAME netdisc_basic_${t}_sm TOPO ${_topo} SM TIMEOUT 600
      COMMAND ${_cmp} ${_cases}/netdisc_basic.cases ${_cases}/scripts_basic.cases)
  endif()
endforeach()
if(ENABLE_IBDIAGS_COMPAT)
  rdma_fabric_test(NAME scripts_compat TOPO net.2sw2path4hca SM TIMEOUT 600
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/scripts_compat.sh)
endif()
if(EXISTS ${PROJECT_SOURCE_DIR}/libibnetdisc/tests/corpus/cache)
  rdma_fabric_test(NAME netdisc_hostile_caches TIMEOUT 900
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/netdisc_hostile.sh
      ${PROJECT_SOURCE_DIR}/libibnetdisc/tests/corpus/cache)
endif()
