#ifndef UTIL_H
#define UTIL_H
/// Scales a *value* by `factor`, see **docs**.
///
/// Uses a_b_c and __init__ names; 2 * 3 = 6.
/// # Not a heading
/// - item one
/// - item two
///
///     indented code
///
/// \param value the value
/// \param factor the factor
/// \return the product
int scale(int value, int factor);

/** Adds two numbers.
 * Line two of the comment
 * with <b>html</b> and &amp; entity.
 */
int add(int a, int b);

#define TWICE(x) ((x) * 2)

struct point { int x; int y; };

typedef struct point point_t;

/// Größe: non-ASCII — “quotes”.
extern int größe;

enum color { RED, GREEN = 5 };
#endif
