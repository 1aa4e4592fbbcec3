#include <sysmeasure.h>
int main(void) { sysmeasure_push_region("installed"); sysmeasure_pop_region("installed"); return 0; }
