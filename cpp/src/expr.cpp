#include "aoe_native/expr.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace aoe {

namespace {

// Long texts are shown as an excerpt around the position, so an error about a
// megabyte of input stays readable.
constexpr size_t kExcerpt = 60;

std::string caret_message(const std::string& text, size_t pos, const std::string& message) {
  std::string head = "restriction '" + text + "'", shown = text;
  size_t caret = std::min(pos, text.size());
  if (text.size() > 2 * kExcerpt + 40) {
    const size_t from = caret > kExcerpt ? caret - kExcerpt : 0;
    const size_t to = std::min(text.size(), caret + kExcerpt);
    head = "restriction of " + std::to_string(text.size()) + " characters";
    shown = (from > 0 ? "..." : "") + text.substr(from, to - from) + (to < text.size() ? "..." : "");
    caret = caret - from + (from > 0 ? 3 : 0);
  }
  return head + ": " + message + " at position " + std::to_string(pos) + "\n  " + shown + "\n  " +
         std::string(caret, ' ') + "^";
}

enum class Tok { Int, Name, Op, LParen, RParen, End };

struct Token {
  Tok kind;
  std::string text;
  size_t pos;
  int64_t value = 0;
};

// Two-character operators first so "//" is not read as "/" "/".
const char* const kOps[] = {"**", "//", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "<", ">"};

std::vector<Token> tokenize(const std::string& s) {
  std::vector<Token> toks;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j < s.size() && (s[j] == '.' || s[j] == 'e' || s[j] == 'E' || s[j] == 'x' || s[j] == 'X'))
        throw ExprError(s, j, "only decimal integer literals are supported");
      std::string digits;
      for (size_t k = i; k < j; ++k)
        if (s[k] != '_') digits += s[k];
      Token t{Tok::Int, s.substr(i, j - i), i};
      try {
        size_t used = 0;
        t.value = std::stoll(digits, &used);
      } catch (const std::out_of_range&) {
        throw ExprError(s, i, "integer literal out of the 64-bit range");
      }
      toks.push_back(t);
      i = j;
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      toks.push_back({Tok::Name, s.substr(i, j - i), i});
      i = j;
      continue;
    }
    if (c == '(' || c == ')') {
      toks.push_back({c == '(' ? Tok::LParen : Tok::RParen, std::string(1, c), i});
      ++i;
      continue;
    }
    bool matched = false;
    for (const char* op : kOps) {
      const size_t n = std::char_traits<char>::length(op);
      if (s.compare(i, n, op) == 0) {
        toks.push_back({Tok::Op, op, i});
        i += n;
        matched = true;
        break;
      }
    }
    if (matched) continue;
    if (c == '=') throw ExprError(s, i, "unexpected '=' (did you mean '=='?)");
    if (c == '&' || c == '|' || c == '!')
      throw ExprError(s, i, std::string("unexpected '") + c + "' (use 'and', 'or', 'not')");
    throw ExprError(s, i, std::string("unexpected character '") + c + "'");
  }
  toks.push_back({Tok::End, "", s.size()});
  return toks;
}

}  // namespace

ExprError::ExprError(const std::string& text, size_t position, const std::string& message)
    : std::invalid_argument(caret_message(text, position, message)), position_(position), message_(message) {}

// Recursive descent with Python's precedence:
//   or < and < not < comparisons (chained) < + - < * / // % < unary - + < **
class ExprParser {
 public:
  ExprParser(Expr& e, const std::vector<std::string>& names) : e_(e), names_(names) {
    if (e.text_.size() > kMaxRestrictionLength)
      throw std::invalid_argument("restriction of " + std::to_string(e.text_.size()) +
                                  " characters is longer than the limit of " +
                                  std::to_string(kMaxRestrictionLength) + " characters");
    toks_ = tokenize(e.text_);
  }

  void parse() {
    if (toks_.front().kind == Tok::End) throw ExprError(e_.text_, 0, "empty restriction");
    e_.root_ = parse_or();
    const Token& t = peek();
    if (t.kind != Tok::End) {
      if (t.kind == Tok::LParen)
        throw ExprError(e_.text_, t.pos, "unexpected '(' (function calls are not supported)");
      throw ExprError(e_.text_, t.pos, "unexpected '" + t.text + "' after a complete expression");
    }
    std::sort(e_.params_.begin(), e_.params_.end());
    e_.params_.erase(std::unique(e_.params_.begin(), e_.params_.end()), e_.params_.end());
  }

 private:
  const Token& peek() const { return toks_[i_]; }
  bool is_word(const char* w) const { return peek().kind == Tok::Name && peek().text == w; }
  bool is_op(const char* op) const { return peek().kind == Tok::Op && peek().text == op; }

  // One level of nesting (parentheses, not, unary sign, exponent), entered
  // just after its token: the parser recurses once per level, so the depth is
  // checked before descending; the error points at that token.
  struct Level {
    explicit Level(ExprParser& p) : p_(p) {
      if (++p_.depth_ > kMaxRestrictionDepth)
        throw ExprError(p_.e_.text_, p_.toks_[p_.i_ - 1].pos,
                        "nesting deeper than " + std::to_string(kMaxRestrictionDepth) +
                            " levels (parentheses, not, unary signs, **)");
    }
    ~Level() { --p_.depth_; }
    ExprParser& p_;
  };

  int add(Expr::Op op, std::vector<int> children = {}, int64_t value = 0) {
    Expr::Node n;
    n.op = op;
    n.value = value;
    n.children = std::move(children);
    e_.nodes_.push_back(std::move(n));
    return int(e_.nodes_.size()) - 1;
  }

  int parse_or() {
    int lhs = parse_and();
    while (is_word("or")) {
      ++i_;
      lhs = add(Expr::Op::Or, {lhs, parse_and()});
    }
    return lhs;
  }
  int parse_and() {
    int lhs = parse_not();
    while (is_word("and")) {
      ++i_;
      lhs = add(Expr::Op::And, {lhs, parse_not()});
    }
    return lhs;
  }
  int parse_not() {
    if (is_word("not")) {
      ++i_;
      Level level(*this);
      return add(Expr::Op::Not, {parse_not()});
    }
    return parse_comparison();
  }
  int parse_comparison() {
    int first = parse_sum();
    std::vector<int> operands{first};
    std::vector<Expr::Cmp> cmps;
    while (peek().kind == Tok::Op) {
      const std::string& op = peek().text;
      Expr::Cmp c;
      if (op == "<") c = Expr::Cmp::Lt;
      else if (op == "<=") c = Expr::Cmp::Le;
      else if (op == ">") c = Expr::Cmp::Gt;
      else if (op == ">=") c = Expr::Cmp::Ge;
      else if (op == "==") c = Expr::Cmp::Eq;
      else if (op == "!=") c = Expr::Cmp::Ne;
      else break;
      ++i_;
      cmps.push_back(c);
      operands.push_back(parse_sum());
    }
    if (cmps.empty()) return first;
    int n = add(Expr::Op::Compare, operands);
    e_.nodes_[n].cmps = std::move(cmps);
    return n;
  }
  int parse_sum() {
    int lhs = parse_product();
    while (is_op("+") || is_op("-")) {
      const Expr::Op op = peek().text == "+" ? Expr::Op::Add : Expr::Op::Sub;
      ++i_;
      lhs = add(op, {lhs, parse_product()});
    }
    return lhs;
  }
  int parse_product() {
    int lhs = parse_unary();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string& t = peek().text;
      const Expr::Op op = t == "*" ? Expr::Op::Mul : t == "%" ? Expr::Op::Mod : Expr::Op::FloorDiv;
      ++i_;
      lhs = add(op, {lhs, parse_unary()});
    }
    return lhs;
  }
  int parse_unary() {
    if (is_op("-")) {
      ++i_;
      Level level(*this);
      return add(Expr::Op::Neg, {parse_unary()});
    }
    if (is_op("+")) {
      ++i_;
      Level level(*this);
      return parse_unary();
    }
    return parse_power();
  }
  int parse_power() {
    int base = parse_atom();
    if (is_op("**")) {
      ++i_;
      Level level(*this);
      return add(Expr::Op::Pow, {base, parse_unary()});  // right-associative, binds tighter than unary on the left
    }
    return base;
  }
  int parse_atom() {
    const Token t = peek();
    switch (t.kind) {
      case Tok::Int:
        ++i_;
        return add(Expr::Op::Const, {}, t.value);
      case Tok::LParen: {
        ++i_;
        Level level(*this);
        int inner = parse_or();
        if (peek().kind != Tok::RParen)
          throw ExprError(e_.text_, peek().pos, "expected ')' to close '(' at position " + std::to_string(t.pos));
        ++i_;
        return inner;
      }
      case Tok::Name: {
        if (t.text == "True" || t.text == "False") {
          ++i_;
          return add(Expr::Op::Const, {}, t.text == "True" ? 1 : 0);
        }
        if (t.text == "and" || t.text == "or" || t.text == "not")
          throw ExprError(e_.text_, t.pos, "expected an operand before '" + t.text + "'");
        auto it = std::find(names_.begin(), names_.end(), t.text);
        if (it == names_.end()) {
          std::string known;
          for (const auto& n : names_) known += (known.empty() ? "" : ", ") + n;
          throw ExprError(e_.text_, t.pos, "unknown name '" + t.text + "' (parameters: " + known + ")");
        }
        ++i_;
        const int idx = int(it - names_.begin());
        e_.params_.push_back(idx);
        return add(Expr::Op::Param, {}, idx);
      }
      case Tok::End:
        throw ExprError(e_.text_, t.pos, "unexpected end of restriction");
      default:
        throw ExprError(e_.text_, t.pos, "unexpected '" + t.text + "'");
    }
  }

  Expr& e_;
  const std::vector<std::string>& names_;
  std::vector<Token> toks_;
  size_t i_ = 0;
  int depth_ = 0;
};

Expr::Expr(const std::string& text, const std::vector<std::string>& names) : text_(text) {
  ExprParser(*this, names).parse();
}

namespace {

// Checked arithmetic: a result outside int64 sets *undef (the restriction is
// then false) instead of wrapping or being undefined behaviour.
int64_t add_checked(int64_t a, int64_t b, bool* undef) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) *undef = true;
  return r;
}
int64_t sub_checked(int64_t a, int64_t b, bool* undef) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) *undef = true;
  return r;
}
int64_t mul_checked(int64_t a, int64_t b, bool* undef) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) *undef = true;
  return r;
}

// Python floor division and modulo (b != 0).
int64_t floor_div(int64_t a, int64_t b, bool* undef) {
  if (b == -1) return sub_checked(0, a, undef);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

bool compare(Expr::Cmp c, int64_t a, int64_t b) {
  switch (c) {
    case Expr::Cmp::Lt: return a < b;
    case Expr::Cmp::Le: return a <= b;
    case Expr::Cmp::Gt: return a > b;
    case Expr::Cmp::Ge: return a >= b;
    case Expr::Cmp::Eq: return a == b;
    case Expr::Cmp::Ne: return a != b;
  }
  return false;
}

}  // namespace

int64_t Expr::eval(const int64_t* values, bool* undefined) const {
  bool undef = false;
  int64_t v = eval_node(root_, values, &undef);
  if (undefined) *undefined = undef;
  return undef ? 0 : v;
}

int64_t Expr::eval_node(int n, const int64_t* values, bool* dz) const {
  const Node& node = nodes_[n];
  const auto& ch = node.children;
  switch (node.op) {
    case Op::Const: return node.value;
    case Op::Param: return values[node.value];
    case Op::Neg: return sub_checked(0, eval_node(ch[0], values, dz), dz);
    case Op::Not: return eval_node(ch[0], values, dz) == 0;
    case Op::Add: return add_checked(eval_node(ch[0], values, dz), eval_node(ch[1], values, dz), dz);
    case Op::Sub: return sub_checked(eval_node(ch[0], values, dz), eval_node(ch[1], values, dz), dz);
    case Op::Mul: return mul_checked(eval_node(ch[0], values, dz), eval_node(ch[1], values, dz), dz);
    case Op::FloorDiv:
    case Op::Mod: {
      const int64_t a = eval_node(ch[0], values, dz), b = eval_node(ch[1], values, dz);
      if (b == 0) {
        *dz = true;
        return 0;
      }
      return node.op == Op::FloorDiv ? floor_div(a, b, dz) : floor_mod(a, b);
    }
    case Op::Pow: {
      int64_t base = eval_node(ch[0], values, dz), e = eval_node(ch[1], values, dz);
      if (e < 0) {  // Python gives a fraction; no integer meaning
        *dz = true;
        return 0;
      }
      int64_t r = 1;
      while (e > 0) {
        if (e & 1) r = mul_checked(r, base, dz);
        e >>= 1;
        if (e > 0) base = mul_checked(base, base, dz);  // only squares still needed
        if (*dz) return 0;
      }
      return r;
    }
    case Op::And: {  // Python semantics: short-circuit, returns an operand
      const int64_t a = eval_node(ch[0], values, dz);
      return a == 0 ? a : eval_node(ch[1], values, dz);
    }
    case Op::Or: {
      const int64_t a = eval_node(ch[0], values, dz);
      return a != 0 ? a : eval_node(ch[1], values, dz);
    }
    case Op::Compare: {  // a < b <= c  ==  a < b and b <= c, each operand evaluated once
      int64_t lhs = eval_node(ch[0], values, dz);
      for (size_t i = 0; i < node.cmps.size(); ++i) {
        const int64_t rhs = eval_node(ch[i + 1], values, dz);
        if (!compare(node.cmps[i], lhs, rhs)) return 0;
        lhs = rhs;
      }
      return 1;
    }
  }
  return 0;
}

}  // namespace aoe
