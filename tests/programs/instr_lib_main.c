/* Calls the instrumented shared library instr_lib.c. */
#include <stdio.h>

int lib_work(int x);

int main(void)
{
    int s = 0;
    for (int i = 0; i < 7; i++)
        s += lib_work(i);
    printf("%d\n", s);
    return 0;
}
