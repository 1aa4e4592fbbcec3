/* A shared library built with sysmeasure-cc -shared: lib_work is called 7
 * times by instr_lib_main.c, lib_inner 14 times. */
__attribute__((noinline)) int lib_inner(int x)
{
    return x * 2 + 1;
}

int lib_work(int x)
{
    return lib_inner(x) + lib_inner(x + 1);
}
