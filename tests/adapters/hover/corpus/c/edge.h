#ifndef EDGE_H
#define EDGE_H
/// Backticks: `a`, ``b``, `c d`, `e`x, (`f`), `g`. and `unclosed
/// Inline code with backslash `a\b` and star `*p` and under `_x_`.
/// Markdown specials: *a* _b_ **c** __d__ ~e~ [f](g) <h> &i; &amp; &#12; &#x1F;
/// Line starting specials follow:
/// + plus bullet
/// * star bullet
/// # heading
/// ## heading two
/// > quote
/// 12. numbered
/// 3) numbered paren
/// ```
/// fenced code?
/// ```
/// ~~~
/// tilde fence?
/// ~~~
/// ===
/// ---
/// ***
/// ___
/// - - -
///
/// Punctuation at ends: comma,
/// semicolon;
/// bang!
/// question?
/// no punctuation
/// continues here
///
///    Indented four spaces
///      six spaces
///	tab indented
///
/// Two trailing spaces here  
/// and after. With a dot.  
/// @param x described
/// \param y described too
/// Trailing backslash \
/// next line.
///
/// Unicode: ÄÖÜ äöü ß — “smart” ‘quotes’ … 日本語 emoji 🎉.
/// Math: a < b > c, a<b, x &y, 1 & 2, 3*4, 5_6, a*b*c, _lead, trail_.
/// Path: C:\dir\file and /usr/bin and http://example.com/a_b?c=d&e=f#g
int edge(int x, int y);

/**
 * Paragraph one line one
 * paragraph one line two.
 *
 *
 *
 * Paragraph two after three blank lines.
 *     code-ish indented line
 * back to normal
 */
int paras(void);

/** Single-line block comment with *stars* and `code`. */
extern int single;

/// <b>bold html</b> and <!-- comment --> and <br/> and <a href="x">link</a>.
/// <not a tag and 3 < 4 and <3 hearts and </end>.
int html(void);

/// Leading spaces in doc lines:
///  one space
///   two spaces
///    three spaces
int spaces(void);

/// A very long line that goes on and on and on and on and on and on and on and on and on and on and on and on and on and on to check that nothing wraps it anywhere at all.
int longline(void);

/// Ends with colon:
/// - dash list item one
/// - dash list item two
///   continued item two
/// * star item
/// 1. one
/// 2. two
int lists(void);

/// \brief Brief with backslash command.
/// \details Details here.
/// \code
/// int a = 1;
/// \endcode
/// \verbatim
/// raw *text*
/// \endverbatim
/// \li list item
/// \n newline command
int commands(void);

#define EMPTY
#define STR(x) #x
#define CAT(a, b) a##b
/// Documented macro `M`.
#define M(x) ((x) + 1)
#define MULTI(a) \
  do {           \
    (void)(a);   \
  } while (0)

typedef enum { A_ONE = 1, A_TWO = 1 << 3, A_THREE = -4 } anon_enum;
typedef struct { char c; double d; int arr[4]; } anon_struct;
struct with_pad { char a; long b; char c; };
union tagged { int i; char bytes[4]; };
typedef void (*callback)(int, const char *);
static inline int inl(int v) { return v * 2; }
extern const char *const names2[];
extern _Bool flag;
extern unsigned long long big;
extern float fl;
extern int matrix[2][3];
#endif
