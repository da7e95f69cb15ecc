#include "doxy.h"
#include "util.h"
int use(void) {
  struct s v = {1, 2};
  union u w;
  fp p = 0;
  struct bits b = {1, 2};
  w.i = v.m + v.n + b.a + b.b;
  return f(1, 2) + g() + h(3) + (p ? p(1) : 0) + (names[0] != 0) + w.i;
}
