/* Growing an array by doubling, written once for every table that grows one
 * element at a time. */
#ifndef SM_GROW_H
#define SM_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* Whether n elements of elem bytes can be allocated at all (a function:
 * in the macro the test is always true for narrow cap types). */
static inline int sm_grow_fits(size_t n, size_t elem)
{
    return n <= SIZE_MAX / elem;
}

/* Doubles the array items of cap elements (to first when it has none),
 * updating items and cap.  0, or -1 with items and cap unchanged when
 * memory is short or the size would overflow.  Callers check n == cap. */
#define SM_GROW(items, cap, first)                                                      \
    __extension__({                                                                     \
        __typeof__(cap) sm_grow_cap_ = (cap) ? (__typeof__(cap))(2 * (cap)) : (first);  \
        __typeof__(items) sm_grow_p_ = NULL;                                            \
        if (sm_grow_cap_ > (cap) && sm_grow_fits(sm_grow_cap_, sizeof *(items)))        \
            sm_grow_p_ = realloc((items), (size_t)sm_grow_cap_ * sizeof *(items));      \
        if (sm_grow_p_) {                                                               \
            (items) = sm_grow_p_;                                                       \
            (cap) = sm_grow_cap_;                                                       \
        }                                                                               \
        sm_grow_p_ ? 0 : -1;                                                            \
    })

#endif
