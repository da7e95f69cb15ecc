#include "edge.h"
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

const char *const names2[] = {"a", "b"};
_Bool flag = 1;
unsigned long long big = 18446744073709551615ULL;
float fl = 1.5f;
int matrix[2][3] = {{1, 2, 3}, {4, 5, 6}};
int single = 42;

static void cb(int n, const char *s) { printf("%d %s\n", n, s); }

int edge(int x, int y) {
  anon_enum e = A_TWO;
  anon_struct s = {'c', 2.0, {1, 2, 3, 4}};
  struct with_pad w = {0};
  union tagged t;
  callback f = cb;
  char buf[16];
  const char *lit = "str\n";
  t.i = x;
  f(e, lit);
  M(x);
  MULTI(y);
  memcpy(buf, lit, strlen(lit) + 1);
  int CAT(ab, cd) = STR(hello)[0];
  size_t n = sizeof(buf);
  void *p = malloc(n);
  free(p);
  return inl(x) + (int)s.d + w.c + t.bytes[0] + abcd + single + paras() + html() + spaces() + longline() +
         lists() + commands() + (int)big + (int)fl + matrix[1][2] + flag + (names2[0] != NULL) + (int)n + EMPTY 0;
}
