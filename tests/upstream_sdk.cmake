# Upstream Vortex's kernel SDK, built from its own sources for the tests.
#
# With VORTEXD_VORTEX_UPSTREAM_DIR (default ../shared/vortex-upstream: a
# verbatim copy of upstream's files, never part of this repository) present,
# each XLEN gets build/vortex-upstream-sdk/rv<XLEN>/ holding what upstream's
# sw/kernel/Makefile makes, made the same way:
#   sw/VX_types.h, sw/VX_config.h  upstream's generator (ci/gen_config.py) on
#                                  its TOML inputs, as its configure does;
#   libvortex.a                    the 2.x start code and runtime;
#   libvortex2.a                   the same built -DKMU_ENABLE (Vortex 3.0);
#   link.ld                        upstream's link32.ld / link64.ld, verbatim,
#                                  after one line that defines STARTUP_ADDR
#                                  (upstream passes --defsym=STARTUP_ADDR).
# Each directory serves as a `vortex_sdk` (docs/VORTEX_ABI.md, "Upstream's
# kernel SDK").  Compiled by Debian's riscv64-unknown-elf-gcc with picolibc's
# headers where upstream uses its own newlib toolchain, with the Makefile's
# CFLAGS.  Worked around: tinyprintf.h and vx_print.c exist only in the
# older tree layout (kernel/src/), which is where they are taken from;
# picolibc's exit() needs an _exit, which upstream/vx_exit.c adds.
set(VORTEXD_VORTEX_UPSTREAM_DIR "${CMAKE_SOURCE_DIR}/../shared/vortex-upstream" CACHE PATH
    "upstream Vortex's files (kernel SDK sources, link scripts, vxbin.py; optional)")
set(VXT_UPSTREAM "${VORTEXD_VORTEX_UPSTREAM_DIR}")
if(NOT EXISTS "${VXT_UPSTREAM}/sw/kernel/src/vx_start.S" OR NOT EXISTS "${VXT_UPSTREAM}/ci/gen_config.py")
  set(VXT_HAVE_UPSTREAM OFF)
  message(STATUS "upstream Vortex SDK tests not added: no upstream files at ${VXT_UPSTREAM} "
                 "(set -DVORTEXD_VORTEX_UPSTREAM_DIR=DIR; docs/tests.md)")
  return()
endif()
find_program(VXT_PYTHON3 python3)
if(NOT VXT_PYTHON3)
  set(VXT_HAVE_UPSTREAM OFF)
  message(STATUS "upstream Vortex SDK tests not added: no python3 to run upstream's generator")
  return()
endif()
set(VXT_HAVE_UPSTREAM ON)
message(STATUS "upstream Vortex SDK: built from ${VXT_UPSTREAM}")

find_program(VXT_RVAR riscv64-unknown-elf-ar REQUIRED)
set(VXT_UPSTREAM_SDK_DIR ${CMAKE_BINARY_DIR}/vortex-upstream-sdk)
set(src ${VXT_UPSTREAM}/sw/kernel/src)
# upstream's SRCS, in its order; vx_print.c from the older layout
set(VXT_UPSTREAM_SOURCES ${src}/vx_start.S ${src}/vx_syscalls.c ${src}/vx_print.S ${src}/tinyprintf.c
    ${VXT_UPSTREAM}/kernel/src/vx_print.c ${src}/vx_spawn.c ${src}/vx_serial.S
    ${CMAKE_CURRENT_SOURCE_DIR}/upstream/vx_exit.c)
set(VXT_UPSTREAM_SDK_TARGETS "")
foreach(xlen 32 64)
  set(out ${VXT_UPSTREAM_SDK_DIR}/rv${xlen})
  if(xlen EQUAL 64)
    set(arch -march=rv64imafd -mabi=lp64d)
    set(startup 0x180000000) # what third-party RV64 builds of upstream pass
  else()
    set(arch -march=rv32imaf -mabi=ilp32f)
    set(startup 0x80000000)
  endif()
  add_custom_command(OUTPUT ${out}/sw/VX_types.h ${out}/sw/VX_config.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out}/sw ${out}/hw
    COMMAND ${CMAKE_COMMAND} -E env XLEN=${xlen} ${VXT_PYTHON3} ${VXT_UPSTREAM}/ci/gen_config.py
            --config ${VXT_UPSTREAM}/VX_types.toml --format cpp --resolved --output ${out}/sw/VX_types.h
    COMMAND ${VXT_PYTHON3} ${VXT_UPSTREAM}/ci/gen_config.py --config ${VXT_UPSTREAM}/VX_config.toml --format cpp
            --resolved --cflags=-DVX_CFG_XLEN=${xlen} --output ${out}/sw/VX_config.h
    DEPENDS ${VXT_UPSTREAM}/ci/gen_config.py ${VXT_UPSTREAM}/VX_types.toml ${VXT_UPSTREAM}/VX_config.toml
    COMMENT "upstream Vortex: VX_types.h, VX_config.h (XLEN ${xlen})")
  set(cflags ${arch} -O3 -mcmodel=medany -fno-exceptions -fdata-sections -ffunction-sections -D__VORTEX__
      -I${VXT_UPSTREAM}/sw/kernel/include -I${out}/sw -I${out}/hw -DVX_CFG_XLEN=${xlen} -DVX_CFG_XLEN_${xlen}
      --specs=picolibc.specs -I${VXT_UPSTREAM}/kernel/src)
  foreach(kind 1 2)
    set(objs "")
    foreach(s ${VXT_UPSTREAM_SOURCES})
      get_filename_component(name ${s} NAME)
      set(flags "")
      if(name MATCHES "\\.S$")
        set(flags -DNEED_GP -DNEED_TLS -DNEED_INITFINI)
      endif()
      if(kind EQUAL 2)
        list(APPEND flags -DKMU_ENABLE)
        set(obj ${out}/obj/${name}.2.o)
      else()
        set(obj ${out}/obj/${name}.o)
      endif()
      add_custom_command(OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${out}/obj
        COMMAND ${VXR_RVGCC} ${cflags} ${flags} -c ${s} -o ${obj}
        DEPENDS ${s} ${out}/sw/VX_types.h ${out}/sw/VX_config.h
        COMMENT "upstream Vortex kernel SDK: ${name} (RV${xlen}${flags})" VERBATIM)
      list(APPEND objs ${obj})
    endforeach()
    if(kind EQUAL 2)
      set(lib ${out}/libvortex2.a)
    else()
      set(lib ${out}/libvortex.a)
    endif()
    add_custom_command(OUTPUT ${lib}
      COMMAND ${CMAKE_COMMAND} -E rm -f ${lib}
      COMMAND ${VXT_RVAR} rcs ${lib} ${objs}
      DEPENDS ${objs} COMMENT "upstream Vortex kernel SDK: ${lib}")
    list(APPEND VXT_UPSTREAM_SDK_TARGETS ${lib})
  endforeach()
  # upstream's link script, verbatim, after the STARTUP_ADDR its build passes
  add_custom_command(OUTPUT ${out}/link.ld
    COMMAND ${CMAKE_COMMAND} -DOUT=${out}/link.ld -DSCRIPT=${VXT_UPSTREAM}/sw/kernel/scripts/link${xlen}.ld
            -DSTARTUP=${startup} -P ${CMAKE_CURRENT_SOURCE_DIR}/upstream_link_ld.cmake
    DEPENDS ${VXT_UPSTREAM}/sw/kernel/scripts/link${xlen}.ld ${CMAKE_CURRENT_SOURCE_DIR}/upstream_link_ld.cmake
    COMMENT "upstream Vortex kernel SDK: link.ld (RV${xlen}, STARTUP_ADDR ${startup})")
  list(APPEND VXT_UPSTREAM_SDK_TARGETS ${out}/link.ld)
endforeach()
add_custom_target(vxt_upstream_sdk ALL DEPENDS ${VXT_UPSTREAM_SDK_TARGETS})
