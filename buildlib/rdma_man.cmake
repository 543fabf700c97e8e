# Man pages are written in pandoc markdown beside the code and converted at
# build time:
#
#   rdma_man_pages(ibv_devinfo.1.md ibv_devices.1.md ...)
#
# A source named NAME.SECTION.md becomes build/man/manSECTION/NAME.SECTION
# and is installed to ${CMAKE_INSTALL_MANDIR}/manSECTION. Without pandoc the
# pages are skipped (one warning at configure time) so that a build never
# fails for documentation.
#
#   rdma_man_alias(ibv_free_device_list.3 ibv_get_device_list.3)
#
# installs a page that only redirects to another one: a one-line roff stub
# ".so man3/ibv_get_device_list.3" written to build/man/man3 at configure
# time. Both names are NAME.SECTION; the target may be in another section.
# Like the pages themselves, stubs are skipped without pandoc (the page they
# point to would be missing).

include_guard(GLOBAL)
include(GNUInstallDirs)

find_program(PANDOC_EXECUTABLE pandoc)
if(NOT PANDOC_EXECUTABLE)
  message(WARNING "pandoc not found: man pages will not be built or installed")
endif()

set(RDMA_MAN_DIR ${CMAKE_BINARY_DIR}/man)

function(rdma_man_pages)
  if(NOT PANDOC_EXECUTABLE)
    return()
  endif()

  set(pages)
  foreach(src IN LISTS ARGN)
    get_filename_component(src_abs ${src} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    get_filename_component(file ${src} NAME)
    if(NOT file MATCHES "^(.+)\\.([1-9][a-z]*)\\.md$")
      message(FATAL_ERROR "rdma_man_pages: ${src} is not named NAME.SECTION.md")
    endif()
    set(name ${CMAKE_MATCH_1})
    set(section ${CMAKE_MATCH_2})
    # man1, man3, ... also for suffixed sections such as 3rdma.
    string(SUBSTRING ${section} 0 1 section_dir)
    set(out_dir ${RDMA_MAN_DIR}/man${section_dir})
    set(out ${out_dir}/${name}.${section})

    add_custom_command(
      OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
      COMMAND ${PANDOC_EXECUTABLE} -s -t man ${src_abs} -o ${out}
      MAIN_DEPENDENCY ${src_abs}
      COMMENT "Building man page ${name}.${section}"
      VERBATIM)
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section_dir})
    list(APPEND pages ${out})
  endforeach()

  # One target per calling directory (plus a counter if a directory calls
  # more than once), so that generated pages are part of "all".
  file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(MAKE_C_IDENTIFIER "man_${rel}" target)
  set(candidate ${target})
  set(n 1)
  while(TARGET ${candidate})
    math(EXPR n "${n} + 1")
    set(candidate ${target}_${n})
  endwhile()
  add_custom_target(${candidate} ALL DEPENDS ${pages})
endfunction()

function(rdma_man_alias alias target)
  if(ARGN)
    message(FATAL_ERROR "rdma_man_alias: takes exactly one alias and one target, got extra ${ARGN}")
  endif()
  foreach(page IN ITEMS ${alias} ${target})
    if(NOT page MATCHES "^[^/]+\\.[1-9][a-z]*$")
      message(FATAL_ERROR "rdma_man_alias: ${page} is not named NAME.SECTION")
    endif()
  endforeach()
  if(NOT PANDOC_EXECUTABLE)
    return()
  endif()

  string(REGEX REPLACE "^.*\\.([1-9])[a-z]*$" "\\1" alias_dir ${alias})
  string(REGEX REPLACE "^.*\\.([1-9])[a-z]*$" "\\1" target_dir ${target})
  set(out ${RDMA_MAN_DIR}/man${alias_dir}/${alias})
  # file(CONFIGURE) rewrites the stub only when its text changes, so a
  # re-run of cmake does not make installed stubs look new.
  file(CONFIGURE OUTPUT ${out} CONTENT ".so man${target_dir}/${target}\n" @ONLY)
  install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${alias_dir})
endfunction()
