# vortexd_add_kernels(NAME FILES a.mlir b.cu ... [TARGET vortex2-rv32|vortex2-rv64|vortex3-rv32|vortex3-rv64]
#                     [WARP_SIZE N] [OPT_LEVEL N] [FLAGS vxc-compile-flags...]
#                     [OUTPUT_DIRECTORY DIR] [CGEIST PROGRAM] [CGEIST_FLAGS ...])
#
# Compiles each GPU-dialect MLIR file through `vxc compile` (the installed
# vortexd::vxc_cli, which starts a vortexd when none runs) into one Vortex
# object per file, DIR/<file name without .mlir>.o (default DIR:
# ${CMAKE_CURRENT_BINARY_DIR}/NAME.kernels), for the device TARGET (vxc's
# --target; default: the configuration's `target`), WARP_SIZE threads per
# warp (--warp-size), OPT_LEVEL (-O), with FLAGS added to vxc compile's
# command line as they are (--shuffle-insns, ...); each request carries
# them, so whatever daemon answers compiles exactly that.  Each object is rebuilt when
# its source changes, and only then; an unchanged source compiled again (a
# clean build directory, another checkout) is a cache hit in the daemon.
#
# The objects are RISC-V code for the device, not for the host: they become
# the sources of NAME, a custom target (created when missing; built by
# `all`), and are listed in its VORTEXD_KERNEL_OBJECTS property, from where
# a rule links them into a device image or installs them:
#   get_target_property(objs device_kernels VORTEXD_KERNEL_OBJECTS)
#
# A file that is not .mlir (HIP or CUDA: .hip, .cu, ...) is first turned
# into GPU-dialect MLIR by Polygeist's cgeist, as a build of cgeist users
# runs it: `CGEIST FILE CGEIST_FLAGS -o DIR/<name>.mlir` (CGEIST: the
# program, default `cgeist` on PATH; CGEIST_FLAGS default
# `--function=* --emit-cuda -S`, to which a project adds its -I, arch and
# resource-dir flags), then compiled like the others.  Its object is
# rebuilt when the file changes; cgeist's own header dependencies are not
# tracked.
function(vortexd_add_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 VXK "" "TARGET;WARP_SIZE;OPT_LEVEL;OUTPUT_DIRECTORY;CGEIST"
                        "FILES;FLAGS;CGEIST_FLAGS")
  if(VXK_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "vortexd_add_kernels: unknown arguments ${VXK_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT VXK_FILES)
    message(FATAL_ERROR "vortexd_add_kernels(${target}): no FILES")
  endif()
  set(flags)
  if(DEFINED VXK_TARGET)
    if(NOT VXK_TARGET MATCHES "^vortex[23]-rv(32|64)$")
      message(FATAL_ERROR "vortexd_add_kernels(${target}): TARGET ${VXK_TARGET} is not vortex2-rv32, "
                          "vortex2-rv64, vortex3-rv32 or vortex3-rv64")
    endif()
    list(APPEND flags --target ${VXK_TARGET})
  endif()
  if(DEFINED VXK_WARP_SIZE)
    list(APPEND flags --warp-size ${VXK_WARP_SIZE})
  endif()
  if(DEFINED VXK_OPT_LEVEL)
    list(APPEND flags -O ${VXK_OPT_LEVEL})
  endif()
  list(APPEND flags ${VXK_FLAGS})
  set(dir ${VXK_OUTPUT_DIRECTORY})
  if(NOT dir)
    set(dir ${CMAKE_CURRENT_BINARY_DIR}/${target}.kernels)
  endif()
  if(NOT DEFINED VXK_CGEIST_FLAGS)
    set(VXK_CGEIST_FLAGS --function=* --emit-cuda -S)
  endif()
  set(objects)
  foreach(src IN LISTS VXK_FILES)
    get_filename_component(abs ${src} ABSOLUTE)
    get_filename_component(stem ${src} NAME_WLE)
    get_filename_component(ext ${src} LAST_EXT)
    set(obj ${dir}/${stem}.o)
    if(obj IN_LIST objects)
      message(FATAL_ERROR "vortexd_add_kernels(${target}): two files named ${stem}.*")
    endif()
    if(NOT ext STREQUAL ".mlir") # HIP or CUDA: cgeist first
      if(NOT VXK_CGEIST)
        find_program(VORTEXD_CGEIST cgeist)
        if(NOT VORTEXD_CGEIST)
          message(FATAL_ERROR "vortexd_add_kernels(${target}): ${src} needs cgeist (CGEIST or PATH)")
        endif()
        set(VXK_CGEIST ${VORTEXD_CGEIST})
      endif()
      set(mlir ${dir}/${stem}.mlir)
      add_custom_command(OUTPUT ${mlir}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
        COMMAND ${VXK_CGEIST} ${abs} ${VXK_CGEIST_FLAGS} -o ${mlir}
        DEPENDS ${abs}
        COMMENT "Translating ${src} to the GPU dialect (cgeist)"
        VERBATIM)
      set(abs ${mlir})
    endif()
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
      COMMAND vortexd::vxc_cli compile ${abs} -o ${obj} ${flags}
      DEPENDS ${abs} vortexd::vxc_cli
      COMMENT "Compiling Vortex kernels ${src}"
      VERBATIM)
    list(APPEND objects ${obj})
  endforeach()
  if(NOT TARGET ${target})
    add_custom_target(${target} ALL)
  endif()
  target_sources(${target} PRIVATE ${objects})
  set_property(TARGET ${target} APPEND PROPERTY VORTEXD_KERNEL_OBJECTS ${objects})
endfunction()
