// Restriction expressions: a small integer language in the syntax Kernel Tuner
// users already write ("32 <= a*b <= 1024 and a % 16 == 0").
//
// Parsed by our own recursive-descent parser (never Python eval) into a flat
// node array, then compiled to a register bytecode that eval() runs over int64
// values without allocating (constants folded, constant operands inlined, jumps
// for the short-circuit operators).  The node tree keeps a direct interpreter,
// eval_reference(): the reference the bytecode is tested against.  Semantics follow Python on
// integers, except that `/` is integer (floor) division.  A division or modulo
// by zero, a negative exponent, or arithmetic that leaves the 64-bit range
// makes the whole restriction false for that configuration.
//
// A restriction may come from a config file or a service request, so its size
// is bounded before any work: at most kMaxRestrictionLength characters and
// kMaxRestrictionDepth levels of nesting (parentheses, not, unary signs and
// the right operand of **), like Python's own limit on nested parentheses.
// Parsing recurses once per level and evaluation once per node, so the C stack
// used is bounded too.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace aoe {

constexpr size_t kMaxRestrictionLength = 10000;  // characters
constexpr int kMaxRestrictionDepth = 200;          // Python's parser allows 200 nested parentheses

// Raised for syntax errors and unknown names; `position` is a 0-based offset
// into the expression text, and what() shows the text with a caret under it.
class ExprError : public std::invalid_argument {
 public:
  ExprError(const std::string& text, size_t position, const std::string& message);
  size_t position() const { return position_; }
  const std::string& message() const { return message_; }

 private:
  size_t position_;
  std::string message_;
};

class Expr {
 public:
  // `names` are the parameters the expression may refer to; a reference is
  // stored as the index into `names`.
  Expr(const std::string& text, const std::vector<std::string>& names);

  // Evaluate with `values[i]` bound to names[i].  Returns the integer value
  // (comparisons and boolean operators give 0 or 1).  Sets *undefined when a
  // division or modulo by zero, a negative exponent or a 64-bit overflow
  // happened (the result is then 0).
  int64_t eval(const int64_t* values, bool* undefined = nullptr) const;

  // True when the expression holds (non-zero and defined).
  bool holds(const int64_t* values) const {
    bool dz = false;
    int64_t v = eval(values, &dz);
    return !dz && v != 0;
  }

  // eval() by walking the node tree: same results, several times slower.
  int64_t eval_reference(const int64_t* values, bool* undefined = nullptr) const;
  bool holds_reference(const int64_t* values) const {
    bool dz = false;
    int64_t v = eval_reference(values, &dz);
    return !dz && v != 0;
  }

  const std::string& text() const { return text_; }
  // Sorted, unique indices of the parameters used.
  const std::vector<int>& params() const { return params_; }

  enum class Op : uint8_t {
    Const, Param, Neg, Not, Add, Sub, Mul, FloorDiv, Mod, Pow, And, Or, Compare
  };
  enum class Cmp : uint8_t { Lt, Le, Gt, Ge, Eq, Ne };
  struct Node {
    Op op;
    int64_t value = 0;           // Const: literal; Param: index
    std::vector<int> children;   // operand node indices
    std::vector<Cmp> cmps;       // Compare: one per adjacent pair of children
  };

  // One bytecode instruction: r[d] = op(r[a], r[b] or k); jumps go to index j.
  // Registers 0..params().size()-1 hold the used parameters, the rest temporaries.
  struct Ins {
    uint8_t op = 0;
    uint8_t cmp = 0;  // chained comparisons: an Expr::Cmp
    int32_t d = 0, a = 0, b = 0;
    int32_t j = 0;
    int64_t k = 0;
  };

 private:
  int64_t eval_node(int n, const int64_t* values, bool* dz) const;
  friend class ExprParser;
  friend class ExprCompiler;
  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
  std::vector<int> params_;
  std::vector<Ins> code_;
  int registers_ = 0;
};

}  // namespace aoe
