/* Region names that are not valid UTF-8 (a Latin-1 byte, a cut sequence, a
 * lone continuation byte), each visited 3 times, and one valid name with
 * non-ASCII letters: the archive and the summaries must hold valid UTF-8
 * (U+FFFD for each invalid byte) with the planted counts. */
#include <sysmeasure.h>

int main(void)
{
    static const char *const names[] = {"caf\xe9", "cut\xe2\x82", "lone\x80x", "na\xc3\xafve"};
    for (int k = 0; k < 3; k++)
        for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
            sysmeasure_push_region(names[i]);
            sysmeasure_pop_region(names[i]);
        }
    return 0;
}
