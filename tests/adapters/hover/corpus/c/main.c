#include "util.h"
#include <stdio.h>

static int counter = 3;

int main(void) {
  struct point p = {1, 2};
  point_t q = p;
  int v = scale(add(1, 2), TWICE(counter));
  enum color c = GREEN;
  printf("%d %d %d\n", v, q.x, c);
  return größe + p.y;
}
