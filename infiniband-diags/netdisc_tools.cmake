# infiniband-diags: the tools built on libibnetdisc (ibnetdiscover,
# iblinkinfo, ibqueryerrors, ibcacheedit) and the scripts (ibhosts,
# ibswitches, dump_lfts, check_lft_balance, ... and, with
# ENABLE_IBDIAGS_COMPAT, the old ibcheck*/ibprint* set).
# Included by infiniband-diags/CMakeLists.txt.

option(ENABLE_IBDIAGS_COMPAT "Install the obsolete infiniband-diags scripts (ibcheckerrors, ibprintca, ...)" OFF)

# What these tools share (fabric handle, link text, --diffcheck parser).
add_library(ibdiags_netdisc_common STATIC netdisc_common.cpp)
target_link_libraries(ibdiags_netdisc_common PUBLIC ibdiags_common ibnetdisc ibmad)

foreach(tool ibnetdiscover iblinkinfo ibqueryerrors ibcacheedit)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${tool}.cpp)
    rdma_sbin_executable(${tool} ${tool}.cpp)
    target_link_libraries(${tool} PRIVATE ibdiags_netdisc_common ibdiags_common ibnetdisc ibmad ibumad)
  endif()
endforeach()

# Scripts: templates in scripts/, configured twice: into build/bin under
# their installed names, finding the other tools and the perl module in the
# build tree (IBPATH still overrides), and into build/scripts-install with
# the installed locations, which is what gets installed to sbin.
set(IBDIAG_CONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/infiniband-diags)

# ibdiag_script(<installed name> <template> [COMPAT] [VAR value ...])
function(ibdiag_script name template)
  cmake_parse_arguments(S "COMPAT" "" "" ${ARGN})
  if(S_COMPAT AND NOT ENABLE_IBDIAGS_COMPAT)
    return()
  endif()
  set(SCRIPT_NAME ${name})
  set(extra ${S_UNPARSED_ARGUMENTS})
  while(extra)
    list(POP_FRONT extra var value)
    set(${var} "${value}")
  endwhile()
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/scripts/${template})
  if(NOT EXISTS ${src})
    return()
  endif()
  set(perms FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
    GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  # the obsolete shell scripts share scripts/compat_lib.sh (@COMPAT_LIB@)
  file(READ ${CMAKE_CURRENT_SOURCE_DIR}/scripts/compat_lib.sh compat_raw)
  set(IBSCRIPTPATH ${CMAKE_BINARY_DIR}/bin)
  set(IBDIAG_PERLLIB ${CMAKE_BINARY_DIR}/perl5)
  string(CONFIGURE "${compat_raw}" COMPAT_LIB @ONLY)
  configure_file(${src} ${CMAKE_BINARY_DIR}/bin/${name} @ONLY ${perms})
  set(IBSCRIPTPATH ${CMAKE_INSTALL_FULL_SBINDIR})
  set(IBDIAG_PERLLIB ${CMAKE_INSTALL_FULL_DATADIR}/perl5)
  string(CONFIGURE "${compat_raw}" COMPAT_LIB @ONLY)
  configure_file(${src} ${CMAKE_BINARY_DIR}/scripts-install/${name} @ONLY ${perms})
  install(PROGRAMS ${CMAKE_BINARY_DIR}/scripts-install/${name}
    DESTINATION ${CMAKE_INSTALL_SBINDIR})
endfunction()

ibdiag_script(ibhosts ib_node_list.sh.in NODE_KIND Ca NODE_WORD CA)
ibdiag_script(ibrouters ib_node_list.sh.in NODE_KIND Rt NODE_WORD router)
ibdiag_script(ibswitches ib_node_list.sh.in NODE_KIND Switch NODE_WORD switch)
ibdiag_script(ibnodes ibnodes.in)
ibdiag_script(dump_lfts dump_lfts.sh.in)
ibdiag_script(dump_mfts dump_mfts.sh.in)
ibdiag_script(check_lft_balance check_lft_balance.pl.in)
ibdiag_script(ibfindnodesusing ibfindnodesusing.pl.in)
ibdiag_script(ibidsverify ibidsverify.pl.in)

foreach(s ibcheckerrors ibcheckerrs ibchecknet ibchecknode ibcheckport
    ibcheckportstate ibcheckportwidth ibcheckstate ibcheckwidth
    ibclearcounters ibclearerrors ibdatacounters ibdatacounts set_nodedesc)
  ibdiag_script(${s} ${s}.sh.in COMPAT)
endforeach()
foreach(s ibdiscover ibswportwatch)
  ibdiag_script(${s} ${s}.pl.in COMPAT)
endforeach()
# ibprintca/rt/switch: one template; the differences are the reference's
# (which lines end a node, whether the last node's ports are printed,
# messages).
set(PRINT_WHAT ca)
set(PRINT_PLURAL cas)
set(PRINT_GUIDNAME ca_guid)
set(PRINT_NAMEARG "<node_name>")
set(PRINT_REPLACEMENT "use ibhosts")
set(PRINT_WARNING [=[*** WARNING ***: this command is deprecated; Please use \"ibhosts\"\n\n]=])
set(PRINT_LISTER ibhosts)
set(PRINT_NODE_RE [=[^Ca.*\"H-(.*)\"\s+# (.*)]=])
set(PRINT_OTHER_RE [=[^(Switch|Rt)]=])
set(PRINT_FLUSH_AT_END 1)
set(PRINT_NOTFOUND [=["\"$target\" not found\n" . "   Try running with the \"-R\" option.\n" . "   If still not found the node is probably down.\n"]=])
set(PRINT_MANY "CA's")
ibdiag_script(ibprintca ibprint.pl.in COMPAT)
set(PRINT_WHAT rt)
set(PRINT_PLURAL rts)
set(PRINT_GUIDNAME rt_guid)
set(PRINT_REPLACEMENT "use ibrouters")
set(PRINT_WARNING [=[*** WARNING ***: this command is deprecated; Please use \"ibrouters\"\n\n]=])
set(PRINT_LISTER ibrouters)
set(PRINT_NODE_RE [=[^Rt.*\"R-(.*)\"\s+# (.*)]=])
set(PRINT_OTHER_RE [=[^(Switch|Ca)]=])
set(PRINT_FLUSH_AT_END 0)
set(PRINT_MANY "Router's")
ibdiag_script(ibprintrt ibprint.pl.in COMPAT)
set(PRINT_WHAT switch)
set(PRINT_PLURAL switches)
set(PRINT_GUIDNAME switch_guid)
set(PRINT_NAMEARG "<switch_name>")
set(PRINT_REPLACEMENT "use ibswitches")
set(PRINT_WARNING "")
set(PRINT_LISTER ibswitches)
set(PRINT_NODE_RE [=[^Switch.*\"S-(.*)\"\s+# (.*) port.*]=])
set(PRINT_OTHER_RE [=[^Ca]=])
set(PRINT_NOTFOUND [=["Switch \"$target\" not found\n" . "   Try running with the \"-R\" option.\n"]=])
set(PRINT_MANY "switches")
ibdiag_script(ibprintswitch ibprint.pl.in COMPAT)

# The perl module the perl scripts share.
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/scripts/IBswcountlimits.pm.in)
  configure_file(scripts/IBswcountlimits.pm.in
    ${CMAKE_BINARY_DIR}/perl5/IBswcountlimits.pm @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/perl5/IBswcountlimits.pm
    DESTINATION ${CMAKE_INSTALL_DATADIR}/perl5)
endif()

# Man pages of this group
set(netdisc_pages)
foreach(p ibnetdiscover iblinkinfo ibqueryerrors ibcacheedit ibhosts
    ibswitches ibnodes ibrouters dump_lfts dump_mfts check_lft_balance
    ibfindnodesusing ibidsverify)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/man/${p}.8.md)
    list(APPEND netdisc_pages man/${p}.8.md)
  endif()
endforeach()
if(ENABLE_IBDIAGS_COMPAT)
  foreach(p ibcheckerrors ibcheckerrs ibchecknet ibchecknode ibcheckport
      ibcheckportstate ibcheckportwidth ibcheckstate ibcheckwidth
      ibclearcounters ibclearerrors ibdatacounters ibdatacounts ibdiscover
      ibprintca ibprintrt ibprintswitch ibswportwatch set_nodedesc)
    list(APPEND netdisc_pages man/${p}.8.md)
  endforeach()
endif()
if(netdisc_pages)
  rdma_man_pages(${netdisc_pages})
endif()

if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/tests/netdisc_tests.cmake)
  include(${CMAKE_CURRENT_SOURCE_DIR}/tests/netdisc_tests.cmake)
endif()
