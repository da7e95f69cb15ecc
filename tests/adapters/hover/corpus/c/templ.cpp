#include <vector>
#include <string>
#include <map>
#include <memory>
#include <optional>
#include <algorithm>

namespace outer {
namespace inner {
/// A templated box holding a `T`.
///
/// \tparam T the held type
template <typename T, int N = 3>
struct Box {
  /// The value, see `get()`.
  T value;
  /// Returns the value.
  /// \return `value` times N
  T get() const { return value * N; }
  /// Operator plus for `Box`.
  Box operator+(const Box &other) const { return Box{value + other.value}; }
  static constexpr int size = N;
};

/// Free function template with default arg.
template <class U>
U twice(U u, int times = 2) { return u * times; }

/// Overload one.
int over(int a);
/// Overload two.
double over(double a);

enum class Color : unsigned char { Red = 1, Green, Blue = 10 };

class Base {
public:
  /// Virtual method.
  virtual ~Base() = default;
  virtual int area() const = 0;
protected:
  int prot = 0;
private:
  int priv_ = 0;
};

class Derived final : public Base {
public:
  explicit Derived(int w) : w_(w) {}
  int area() const override { return w_ * w_; }
private:
  int w_;
};

using IntVec = std::vector<int>;
typedef std::map<std::string, int> Dict;
} // namespace inner
} // namespace outer

namespace oi = outer::inner;

int run() {
  oi::Box<int> b{2};
  auto sum = b + b;
  auto t = oi::twice(3.5);
  oi::IntVec v{1, 2, 3};
  oi::Dict d;
  d["x"] = 1;
  std::string s = "hello";
  s.append(" world");
  std::sort(v.begin(), v.end());
  auto it = std::find(v.begin(), v.end(), 2);
  std::unique_ptr<oi::Base> p = std::make_unique<oi::Derived>(3);
  std::optional<int> o = std::nullopt;
  auto lambda = [&](int q) { return q + b.value; };
  oi::Color c = oi::Color::Green;
  constexpr int k = oi::Box<int, 5>::size;
  return sum.get() + (int)t + v.size() + d.size() + s.size() + (it != v.end()) + p->area() + o.value_or(0) +
         lambda(1) + static_cast<int>(c) + k + oi::over(1) + (int)oi::over(1.0);
}
