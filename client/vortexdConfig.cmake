# CMake package of vortexd:  find_package(vortexd 0.1 REQUIRED)
#   vortexd::vxc       libvxc, the client library (target_link_libraries)
#   vortexd::runtime   libvortexd_runtime, for host programs whose launches
#                      get their kernels from vortexd
#   vortexd::vxc_cli   the vxc program; vortexd::vortexd the daemon
#   vortexd_add_kernels(TARGET FILES ... [WARP_SIZE N] [OPT_LEVEL N])
#                      compiles kernels through vxc (vortexdKernels.cmake)
include("${CMAKE_CURRENT_LIST_DIR}/vortexdTargets.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/vortexdKernels.cmake")
