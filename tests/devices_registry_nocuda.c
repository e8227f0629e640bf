/*
 * devices_registry_nocuda.c — backend/registry.c compiled a second time,
 * without the CUDA define CMake gives the library's copy, so every build
 * also tests the "no CUDA backend" path (test_devices_nocuda).
 *
 * Linked ahead of libspillway, this object's sw_devices_query wins and the
 * archive's registry.o is never pulled in. If registry.c comes to define
 * symbols other library objects need, this test will fail to link with
 * "multiple definition"; then move those symbols out of registry.c.
 */
#include "backend/registry.c"
