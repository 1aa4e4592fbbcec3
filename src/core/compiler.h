/* Small compiler helpers shared by every module. */
#ifndef SM_COMPILER_H
#define SM_COMPILER_H

#define SM_HIDDEN __attribute__((visibility("hidden")))
#define SM_EXPORT __attribute__((visibility("default")))
#define SM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SM_NOINLINE __attribute__((noinline))
#define SM_ALWAYS_INLINE inline __attribute__((always_inline))
#define SM_COLD __attribute__((cold, noinline))
/* initial-exec TLS: one instruction to reach the thread's location, also in a
 * library loaded by dlopen (we use 8 bytes of the static TLS surplus). */
#define SM_TLS __thread __attribute__((tls_model("initial-exec")))

#endif
