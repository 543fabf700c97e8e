# Shared CMake helpers for the project's libraries, providers and programs.

# rdma_public_headers(SUBDIR hdr...): copy headers into build/include/SUBDIR
# (as they are installed) and install them.
function(rdma_public_headers subdir)
  foreach(h ${ARGN})
    get_filename_component(name ${h} NAME)
    configure_file(${h} ${RDMA_BUILD_INCLUDE}/${subdir}/${name} COPYONLY)
    install(FILES ${h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${subdir})
  endforeach()
endfunction()

# rdma_shared_library(TARGET SONAME_MAJOR VERSION MAPFILE src...): a public
# shared library with a linker version script (the reference's nodes).
function(rdma_shared_library target somajor version mapfile)
  add_library(${target} SHARED ${ARGN})
  set_target_properties(${target} PROPERTIES
    SOVERSION ${somajor} VERSION ${version}
    LINK_DEPENDS ${mapfile})
  target_link_options(${target} PRIVATE "LINKER:--version-script=${mapfile}")
  # Sanitizer builds (RDMA_FUZZ) leave the runtime's symbols to the program.
  if(NOT RDMA_FUZZ)
    target_link_options(${target} PRIVATE "LINKER:--no-undefined" "LINKER:-z,defs")
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# rdma_pkgconfig(TARGET [REQUIRES...]): lib<TARGET>.pc, so that programs
# build with `pkg-config --cflags --libs lib<TARGET>` alone; Version is the
# library's file version, as the reference's .pc files give it, and
# REQUIRES the libraries only a static link needs (Requires.private).
function(rdma_pkgconfig target)
  set(RDMA_PC_NAME ${target})
  get_target_property(RDMA_PC_VERSION ${target} VERSION)
  string(REPLACE ";" " " RDMA_PC_REQUIRES "${ARGN}")
  foreach(d LIBDIR INCLUDEDIR)
    # relative to the prefix where they are under it (relocatable)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
      set(RDMA_PC_${d} "${CMAKE_INSTALL_${d}}")
    else()
      set(RDMA_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
    endif()
  endforeach()
  configure_file(${CMAKE_SOURCE_DIR}/buildlib/pkgconfig.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/lib${target}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/lib${target}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()

# rdma_executable(TARGET src...): an installed program.
function(rdma_executable target)
  add_executable(${target} ${ARGN})
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

# rdma_sbin_executable(TARGET src...): an installed administrator's program
# (the infiniband-diags tools live in sbin, as in the reference).
function(rdma_sbin_executable target)
  add_executable(${target} ${ARGN})
  install(TARGETS ${target} RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})
endfunction()

# rdma_reference_twin(TARGET [LIBS libs...]): the reference run of the test
# program TARGET: TARGET_reference, from the same sources built against the
# system's (Debian's) headers only and linked with Debian's libibverbs (and
# LIBS). Nothing happens where Debian's libibverbs or its headers are
# missing: test for the target before registering its run.
function(rdma_reference_twin target)
  cmake_parse_arguments(R "" "" "LIBS" ${ARGN})
  find_library(RDMA_REF_IBVERBS NAMES libibverbs.so.1
    PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} NO_DEFAULT_PATH)
  if(NOT RDMA_REF_IBVERBS OR NOT EXISTS /usr/include/infiniband/verbs.h)
    return()
  endif()
  get_target_property(srcs ${target} SOURCES)
  add_executable(${target}_reference ${srcs})
  set_property(TARGET ${target}_reference PROPERTY INCLUDE_DIRECTORIES "")
  target_link_libraries(${target}_reference PRIVATE ${RDMA_REF_IBVERBS} ${R_LIBS})
endfunction()
