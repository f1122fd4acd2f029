# drop_ldconfig_scripts.cmake: run by cpack after it made the packages (CPACK_POST_BUILD_SCRIPTS,
# cmake/KairosPackage.cmake). CPack gives every package that holds a shared library under /usr/lib
# a postinst and a postrm that only call ldconfig. Debian runs ldconfig through libc's trigger
# instead (the runtime package's DEBIAN/triggers: activate-noawait ldconfig; policy 8.1.1), and
# lintian flags such calls (maintscript-calls-ldconfig). This takes those two scripts out of each
# package, and only when they are exactly CPack's: a script that does anything more is kept (and
# lintian then says so). Needs dpkg-deb, which is on every machine that builds .deb files.
find_program(KAIROS_DPKG_DEB dpkg-deb)
if(NOT KAIROS_DPKG_DEB)
  message(WARNING "kairos: no dpkg-deb: the packages keep CPack's ldconfig postinst and postrm")
  return()
endif()
# CPack's two scripts (cmCPackDebGenerator), compared with blank lines dropped.
set(_cpack_postinst "#!/bin/sh\nset -e\nif [ \"$1\" = \"configure\" ]; then\n\tldconfig\nfi\n")
set(_cpack_postrm "#!/bin/sh\nset -e\nif [ \"$1\" = \"remove\" ]; then\n\tldconfig\nfi\n")
foreach(deb IN LISTS CPACK_PACKAGE_FILES)
  if(NOT deb MATCHES "[.]deb$")
    continue()
  endif()
  set(dir "${deb}.unpacked")
  file(REMOVE_RECURSE "${dir}")
  execute_process(COMMAND ${KAIROS_DPKG_DEB} --raw-extract "${deb}" "${dir}" COMMAND_ERROR_IS_FATAL ANY)
  set(changed FALSE)
  foreach(script postinst postrm)
    set(file "${dir}/DEBIAN/${script}")
    if(NOT EXISTS "${file}")
      continue()
    endif()
    file(READ "${file}" text)
    string(REGEX REPLACE "\n\n+" "\n" text "${text}")
    if(text STREQUAL "${_cpack_${script}}")
      file(REMOVE "${file}")
      set(changed TRUE)
    else()
      message(WARNING "kairos: ${deb}: its ${script} does more than CPack's ldconfig call; kept")
    endif()
  endforeach()
  if(changed)
    execute_process(COMMAND ${KAIROS_DPKG_DEB} --root-owner-group --build "${dir}" "${deb}"
                    OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  endif()
  file(REMOVE_RECURSE "${dir}")
endforeach()
