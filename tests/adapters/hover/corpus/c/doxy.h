#ifndef DOXY_H
#define DOXY_H
/**
 * @brief Computes the thing.
 *
 * Longer text with `code` and *emph* and a_b.
 * Second line: ends with colon:
 * next line.
 *
 * @param[in] a the first
 * @param b the second, see \p a
 * @return the sum of \c a and b
 * @retval 0 on nothing
 * @note be careful
 * @warning dangerous
 * @code
 *   int x = f(1, 2);
 * @endcode
 * 1. first
 * 2) second
 * > quoted
 * ---
 * ***
 * ___
 * 3.5 is a number
 * [link](http://x) and ]: thing
 * <https://auto.link> and <em>tag</em> & x &lt; y
 * ~~~ tilde
 * == setext?
 * tabs	inside	text   and   spaces
 * trailing two spaces  
 * back\slash and \\ double
 */
int f(int a, int b);

/// @deprecated use f
/// @see f
/// @todo later
int g(void);

/*! Qt style with \a arg and \b bold and \e emph */
int h(int arg);

//! @tparam T a type (in C meaningless)
struct s { int m; /**< member doc */ int n; ///< other member doc
};

/// Union doc.
union u { int i; float f; };

/// Function pointer typedef.
typedef int (*fp)(int);

/// Array var.
extern const char *names[3];

/// Bitfield struct.
struct bits { unsigned a : 3; unsigned b : 5; };
#endif
