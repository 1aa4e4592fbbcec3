/* libsysmeasure-kokkos.so: the KokkosP tool library.  Kokkos loads it by name
 * (KOKKOS_TOOLS_LIBS from Kokkos 3.7, KOKKOS_PROFILE_LIBRARY before) and
 * looks its kokkosp_* entry points up with dlsym; they are the library's only
 * exported symbols.
 *
 * The types below are the KokkosP C ABI as Kokkos 3.x and 4.x document it
 * (Kokkos_Profiling_C_Interface.h); written here so that the library builds
 * without Kokkos. */
#ifndef SM_KOKKOS_TOOL_H
#define SM_KOKKOS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SM_KOKKOSP_EXPORT __attribute__((visibility("default")))

/* kokkosp_init_library's devices (Kokkos passes none so far). */
struct Kokkos_Profiling_KokkosPDeviceInfo {
    size_t deviceID;
};

/* A memory space, by name ("Host", "Cuda", "CudaUVM", ...). */
struct Kokkos_Profiling_SpaceHandle {
    char name[64];
};

/* What Kokkos offers a tool (Kokkos 3.3 and newer): a fence it may invoke,
 * then room for more, 32 function pointers in all. */
typedef void (*Kokkos_Tools_toolInvokedFenceFunction)(const uint32_t);
typedef void (*Kokkos_Tools_functionPointer)(void);
struct Kokkos_Tools_ToolProgrammingInterface {
    Kokkos_Tools_toolInvokedFenceFunction fence;
    Kokkos_Tools_functionPointer padding[31];
};

/* What a tool asks of Kokkos: 256 flags, the first used so far. */
struct Kokkos_Tools_ToolSettings {
    bool requires_global_fencing;
    bool padding[255];
};

/* The device id of kernels and fences: the device type (Serial 0, OpenMP 1,
 * Cuda 2, HIP 3, OpenMPTarget 4, HPX 5, Threads 6, SYCL 7, ...) in the top 8
 * bits, in Kokkos 3.x and 4.x alike; below it the instance. */
#define SM_KOKKOSP_DEVICE_TYPE(dev_id) ((uint32_t)(dev_id) >> 24)

SM_KOKKOSP_EXPORT void kokkosp_init_library(const int load_seq, const uint64_t interface_version,
                                            const uint32_t dev_info_count,
                                            struct Kokkos_Profiling_KokkosPDeviceInfo *dev_info);
SM_KOKKOSP_EXPORT void kokkosp_finalize_library(void);
SM_KOKKOSP_EXPORT void kokkosp_print_help(char *exe);
SM_KOKKOSP_EXPORT void kokkosp_parse_args(int argc, char **argv);
SM_KOKKOSP_EXPORT void kokkosp_request_tool_settings(const uint32_t num_settings,
                                                     struct Kokkos_Tools_ToolSettings *settings);
SM_KOKKOSP_EXPORT void kokkosp_provide_tool_programming_interface(
    const uint32_t num_functions, struct Kokkos_Tools_ToolProgrammingInterface interface);

SM_KOKKOSP_EXPORT void kokkosp_begin_parallel_for(const char *name, const uint32_t dev_id,
                                                  uint64_t *kernel_id);
SM_KOKKOSP_EXPORT void kokkosp_end_parallel_for(const uint64_t kernel_id);
SM_KOKKOSP_EXPORT void kokkosp_begin_parallel_reduce(const char *name, const uint32_t dev_id,
                                                     uint64_t *kernel_id);
SM_KOKKOSP_EXPORT void kokkosp_end_parallel_reduce(const uint64_t kernel_id);
SM_KOKKOSP_EXPORT void kokkosp_begin_parallel_scan(const char *name, const uint32_t dev_id,
                                                   uint64_t *kernel_id);
SM_KOKKOSP_EXPORT void kokkosp_end_parallel_scan(const uint64_t kernel_id);
SM_KOKKOSP_EXPORT void kokkosp_begin_fence(const char *name, const uint32_t dev_id,
                                           uint64_t *fence_id);
SM_KOKKOSP_EXPORT void kokkosp_end_fence(const uint64_t fence_id);

SM_KOKKOSP_EXPORT void kokkosp_push_profile_region(const char *name);
SM_KOKKOSP_EXPORT void kokkosp_pop_profile_region(void);
SM_KOKKOSP_EXPORT void kokkosp_create_profile_section(const char *name, uint32_t *section_id);
SM_KOKKOSP_EXPORT void kokkosp_start_profile_section(const uint32_t section_id);
SM_KOKKOSP_EXPORT void kokkosp_stop_profile_section(const uint32_t section_id);
SM_KOKKOSP_EXPORT void kokkosp_destroy_profile_section(const uint32_t section_id);
SM_KOKKOSP_EXPORT void kokkosp_profile_event(const char *name);

SM_KOKKOSP_EXPORT void kokkosp_allocate_data(const struct Kokkos_Profiling_SpaceHandle space,
                                             const char *label, const void *ptr,
                                             const uint64_t size);
SM_KOKKOSP_EXPORT void kokkosp_deallocate_data(const struct Kokkos_Profiling_SpaceHandle space,
                                               const char *label, const void *ptr,
                                               const uint64_t size);
SM_KOKKOSP_EXPORT void kokkosp_begin_deep_copy(struct Kokkos_Profiling_SpaceHandle dst_space,
                                               const char *dst_label, const void *dst_ptr,
                                               struct Kokkos_Profiling_SpaceHandle src_space,
                                               const char *src_label, const void *src_ptr,
                                               uint64_t size);
SM_KOKKOSP_EXPORT void kokkosp_end_deep_copy(void);
SM_KOKKOSP_EXPORT void kokkosp_dual_view_sync(const char *label, const void *const ptr,
                                              bool to_device);
SM_KOKKOSP_EXPORT void kokkosp_dual_view_modify(const char *label, const void *const ptr,
                                                bool on_device);
SM_KOKKOSP_EXPORT void kokkosp_declare_metadata(const char *key, const char *value);

#endif
