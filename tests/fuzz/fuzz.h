/* fuzz.h — shared by the libFuzzer targets (tests/fuzz/README.md).
 *
 * Each target feeds its input to one reader the way the command line does
 * and stops (__builtin_trap) when a property the reader promises fails; the
 * sanitizers catch the rest.  Inputs reach a reader as NUL-terminated text,
 * as sim_read_file gives it: an input holding a NUL byte is what that
 * function refuses, so it is skipped. */
#ifndef TRAINSIM_FUZZ_H
#define TRAINSIM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The input as a malloc'd C string, or NULL when it holds a NUL byte. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    if (memchr(data, 0, size))
        return NULL;
    char *t = malloc(size + 1);
    if (!t)
        abort();
    memcpy(t, data, size);
    t[size] = 0;
    return t;
}

#define FUZZ_CHECK(cond)                                                                                          \
    do {                                                                                                          \
        if (!(cond))                                                                                              \
            __builtin_trap();                                                                                     \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
