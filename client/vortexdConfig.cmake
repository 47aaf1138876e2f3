# CMake package of libvxc:  find_package(vortexd 0.1 REQUIRED)
#                           target_link_libraries(app PRIVATE vortexd::vxc)
include("${CMAKE_CURRENT_LIST_DIR}/vortexdTargets.cmake")
