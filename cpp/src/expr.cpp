#include "aoe_native/expr.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <limits>
#include <memory>

namespace aoe {

namespace {

// Long texts are shown as an excerpt around the position, so an error about a
// megabyte of input stays readable.
constexpr size_t kExcerpt = 60;

// Control characters as \xNN: a NUL would end the message where C strings end.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string caret_message(const std::string& raw, size_t pos, const std::string& message) {
  // Escapes lengthen the text: the caret moves with them.
  size_t shift = 0;
  for (size_t k = 0; k < std::min(pos, raw.size()); ++k) {
    const auto u = static_cast<unsigned char>(raw[k]);
    if (u < 0x20 || u == 0x7f) shift += 3;
  }
  const std::string text = printable(raw);
  const size_t at = pos;
  pos += shift;
  std::string head = "restriction '" + text + "'", shown = text;
  size_t caret = std::min(pos, text.size());
  if (text.size() > 2 * kExcerpt + 40) {
    size_t from = caret > kExcerpt ? caret - kExcerpt : 0, to = std::min(text.size(), caret + kExcerpt);
    auto inside = [&](size_t k) { return k < text.size() && (static_cast<unsigned char>(text[k]) & 0xc0) == 0x80; };
    while (inside(from)) ++from;  // whole UTF-8 characters only
    while (inside(to)) ++to;
    head = "restriction of " + std::to_string(text.size()) + " characters";
    shown = (from > 0 ? "..." : "") + text.substr(from, to - from) + (to < text.size() ? "..." : "");
    caret = caret - from + (from > 0 ? 3 : 0);
  }
  return head + ": " + message + " at position " + std::to_string(at) + "\n  " + shown + "\n  " +
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
    if (static_cast<unsigned char>(c) >= 0x80) {  // the whole UTF-8 character, not its first byte
      size_t j = i + 1;
      while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xc0) == 0x80) ++j;
      throw ExprError(s, i, "unexpected character '" + s.substr(i, j - i) + "' (restrictions are ASCII: <=, >=, !=, digits 0-9)");
    }
    if (c == ',') throw ExprError(s, i, "unexpected ',' (function calls and tuples are not supported)");
    if (c == '=') throw ExprError(s, i, "unexpected '=' (did you mean '=='?)");
    if (c == '&' || c == '|' || c == '!')
      throw ExprError(s, i, std::string("unexpected '") + c + "' (use 'and', 'or', 'not')");
    throw ExprError(s, i, "unexpected character '" + printable(std::string(1, c)) + "'");
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
          throw ExprError(e_.text_, peek().pos, "expected ')' to close the '(' of position " + std::to_string(t.pos) + ",");
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

int64_t power(int64_t base, int64_t e, bool* undef) {
  if (e < 0) {  // Python gives a fraction; no integer meaning
    *undef = true;
    return 0;
  }
  int64_t r = 1;
  while (e > 0) {
    if (e & 1) r = mul_checked(r, base, undef);
    e >>= 1;
    if (e > 0) base = mul_checked(base, base, undef);  // only squares still needed
    if (*undef) return 0;
  }
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

int64_t Expr::eval_reference(const int64_t* values, bool* undefined) const {
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
      const int64_t base = eval_node(ch[0], values, dz), e = eval_node(ch[1], values, dz);
      return power(base, e, dz);
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

// ---- bytecode -------------------------------------------------------------------
// The node tree is compiled to register code because every tiling the cost
// model or a search space checks runs every restriction: walking the tree
// (a call and a switch per node, children behind vectors) was most of
// estimate_batch's time.  Each register instruction does one operator; a
// constant operand is inlined (`x % 16` is one AndK), all-constant subtrees
// are folded, `and`/`or`/chained comparisons jump past what Python would not
// evaluate.  An undefined step (division by zero, overflow) ends the run at
// once: the result is then "undefined" whatever follows, as in the tree walk.

namespace {

enum Code : uint8_t {
  kRet, kRetK, kUndef, kLoadK, kMov, kNeg, kNot,
  kAdd, kSub, kMul, kDiv, kMod, kPow,
  kAddK, kSubK, kMulK, kDivK, kModK,
  kShrK,  // floor division by a power of two (arithmetic shift, k = shift)
  kAndK,  // floor modulo by a power of two (k = mask)
  kLt, kLe, kGt, kGe, kEq, kNe,
  kLtK, kLeK, kGtK, kGeK, kEqK, kNeK,
  kChain, kChainK,  // a link of a chained comparison, or `cmp and ...`: if !cmp(a, b): r[d] = 0, jump
  kOrCmp, kOrCmpK,  // `cmp or ...`: if cmp(a, b): r[d] = 1, jump
  kJz, kJnz,        // r[d] = r[a]; jump if it is zero (and) / non-zero (or)
};
// The comparison opcodes are kLt + Expr::Cmp (kLtK + Expr::Cmp with a constant).
static_assert(kNe - kLt == int(Expr::Cmp::Ne) && kNeK - kLtK == int(Expr::Cmp::Ne), "opcode order");

Expr::Cmp mirror(Expr::Cmp c) {  // k < x  ==  x > k
  switch (c) {
    case Expr::Cmp::Lt: return Expr::Cmp::Gt;
    case Expr::Cmp::Le: return Expr::Cmp::Ge;
    case Expr::Cmp::Gt: return Expr::Cmp::Lt;
    case Expr::Cmp::Ge: return Expr::Cmp::Le;
    default: return c;
  }
}

bool power_of_two(int64_t k) { return k > 0 && (k & (k - 1)) == 0; }

}  // namespace

class ExprCompiler {
 public:
  explicit ExprCompiler(Expr& e) : e_(e), sp_(int(e.params_.size())), max_(sp_) {}

  void compile() {
    const Operand r = node(e_.root_);
    Expr::Ins ret{};
    ret.op = r.konst ? kRetK : kRet;
    ret.a = r.reg;
    ret.k = r.k;
    emit(ret);
    e_.registers_ = max_;
  }

 private:
  struct Operand {
    bool konst;
    int64_t k;
    int reg;
  };
  static Operand K(int64_t k) { return {true, k, -1}; }
  static Operand R(int reg) { return {false, 0, reg}; }

  int temp() {
    max_ = std::max(max_, sp_ + 1);
    return sp_++;
  }
  int dest(int want) { return want >= 0 ? want : temp(); }
  size_t emit(uint8_t op, int d = 0, int a = 0, int b = 0, int64_t k = 0, uint8_t cmp = 0) {
    Expr::Ins i{};
    i.op = op, i.d = d, i.a = a, i.b = b, i.k = k, i.cmp = cmp;
    return emit(i);
  }
  size_t emit(const Expr::Ins& i) {
    e_.code_.push_back(i);
    return e_.code_.size() - 1;
  }
  void land(size_t jump) { e_.code_[jump].j = int32_t(e_.code_.size()); }
  int reg(const Operand& o) {  // the operand in a register
    if (!o.konst) return o.reg;
    const int t = temp();
    emit(kLoadK, t, 0, 0, o.k);
    return t;
  }
  // A constant result, or the end of the run when the constant step is undefined.
  Operand fold(int64_t v, bool undef) {
    if (undef) emit(kUndef);
    return K(undef ? 0 : v);
  }

  // `want`: a register the result may be written to (-1: a new temporary);
  // the caller then needs no move.
  Operand node(int n, int want = -1) {
    const Expr::Node& nd = e_.nodes_[n];
    const auto& ch = nd.children;
    using Op = Expr::Op;
    switch (nd.op) {
      case Op::Const: return K(nd.value);
      case Op::Param: {
        const auto& ps = e_.params_;
        return R(int(std::lower_bound(ps.begin(), ps.end(), int(nd.value)) - ps.begin()));
      }
      case Op::Neg:
      case Op::Not: {
        const int base = sp_;
        const Operand a = node(ch[0]);
        sp_ = base;
        if (a.konst) {
          bool undef = false;
          const int64_t v = nd.op == Op::Neg ? sub_checked(0, a.k, &undef) : int64_t(a.k == 0);
          return fold(v, undef);
        }
        const int d = dest(want);
        emit(nd.op == Op::Neg ? kNeg : kNot, d, a.reg);
        return R(d);
      }
      case Op::And:
      case Op::Or: return logical(nd.op == Op::And, ch, want);
      case Op::Compare: return chain(nd, want);
      default: return arithmetic(nd.op, ch, want);
    }
  }

  Operand arithmetic(Expr::Op op, const std::vector<int>& ch, int want) {
    using Op = Expr::Op;
    const int base = sp_;
    Operand a = node(ch[0]), b = node(ch[1]);
    if (a.konst && b.konst) {
      sp_ = base;
      bool undef = false;
      int64_t v = 0;
      switch (op) {
        case Op::Add: v = add_checked(a.k, b.k, &undef); break;
        case Op::Sub: v = sub_checked(a.k, b.k, &undef); break;
        case Op::Mul: v = mul_checked(a.k, b.k, &undef); break;
        case Op::FloorDiv:
        case Op::Mod:
          if (b.k == 0) undef = true;
          else v = op == Op::FloorDiv ? floor_div(a.k, b.k, &undef) : floor_mod(a.k, b.k);
          break;
        default: v = power(a.k, b.k, &undef); break;
      }
      return fold(v, undef);
    }
    if (a.konst && (op == Op::Add || op == Op::Mul)) std::swap(a, b);  // commutative: constant on the right
    uint8_t code;
    if (b.konst && op != Op::Pow) {
      int64_t k = b.k;
      switch (op) {
        case Op::Add: code = kAddK; break;
        case Op::Sub: code = kSubK; break;
        case Op::Mul: code = kMulK; break;
        case Op::FloorDiv:
        case Op::Mod:
          if (k == 0) {  // undefined whenever reached
            sp_ = base;
            return fold(0, true);
          }
          if (op == Op::Mod) {
            code = power_of_two(k) ? kAndK : kModK;
            if (code == kAndK) k -= 1;
          } else if (power_of_two(k)) {
            code = kShrK;
            k = __builtin_ctzll(uint64_t(k));
          } else {
            code = kDivK;
          }
          break;
        default: code = kAddK; break;  // unreachable: every arithmetic op is listed
      }
      sp_ = base;
      const int d = dest(want);
      emit(code, d, a.reg, 0, k);
      return R(d);
    }
    const int ra = reg(a), rb = reg(b);
    switch (op) {
      case Op::Add: code = kAdd; break;
      case Op::Sub: code = kSub; break;
      case Op::Mul: code = kMul; break;
      case Op::FloorDiv: code = kDiv; break;
      case Op::Mod: code = kMod; break;
      default: code = kPow; break;
    }
    sp_ = base;
    const int d = dest(want);
    emit(code, d, ra, rb);
    return R(d);
  }

  // Python's `a and b` is a when a is false, else b (`or`: a when a is true).
  Operand logical(bool is_and, const std::vector<int>& ch, int want) {
    const int base = sp_;
    const Operand a = node(ch[0]);
    if (a.konst) {
      sp_ = base;
      if ((a.k == 0) == is_and) return a;  // b is never evaluated
      return node(ch[1], want);
    }
    sp_ = base;
    const int d = dest(want);
    size_t jump;
    // a single comparison (0 or 1) ends with one compare instruction into a's
    // register: it becomes the conditional jump itself.
    const Expr::Node& an = e_.nodes_[ch[0]];
    const Expr::Ins* last = e_.code_.empty() ? nullptr : &e_.code_.back();
    if (an.op == Expr::Op::Compare && an.cmps.size() == 1 && last && last->d == a.reg && last->op >= kLt &&
        last->op <= kNeK) {
      jump = e_.code_.size() - 1;
      Expr::Ins& in = e_.code_[jump];
      const bool with_k = in.op >= kLtK;
      in.cmp = uint8_t(in.op - (with_k ? kLtK : kLt));
      in.op = is_and ? (with_k ? kChainK : kChain) : (with_k ? kOrCmpK : kOrCmp);
      in.d = d;
    } else {
      jump = emit(is_and ? kJz : kJnz, d, a.reg);
    }
    const Operand b = node(ch[1], d);
    if (b.konst) emit(kLoadK, d, 0, 0, b.k);
    else if (b.reg != d) emit(kMov, d, b.reg);
    land(jump);
    sp_ = std::max(base, d + 1);
    return R(d);
  }

  // a < b <= c: each operand evaluated once, the rest skipped after a false link.
  Operand chain(const Expr::Node& nd, int want) {
    const int base = sp_;
    const int d = dest(want);
    std::vector<size_t> jumps;
    bool runtime = false;  // some link is tested at run time
    int64_t value = 1;     // the result when every link is constant
    Operand lhs = node(nd.children[0]);
    for (size_t i = 0; i < nd.cmps.size(); ++i) {
      const Operand rhs = node(nd.children[i + 1]);
      const bool last = i + 1 == nd.cmps.size();
      Expr::Cmp c = nd.cmps[i];
      if (lhs.konst && rhs.konst) {
        if (!compare(c, lhs.k, rhs.k)) {  // false from here on: later operands are not evaluated
          value = 0;
          if (runtime) emit(kLoadK, d, 0, 0, 0);
          break;
        }
        if (last && runtime) emit(kLoadK, d, 0, 0, 1);
      } else {
        int a = lhs.reg, b = rhs.reg;
        int64_t k = 0;
        bool with_k = false;
        if (rhs.konst) with_k = true, k = rhs.k;
        else if (lhs.konst) with_k = true, k = lhs.k, a = rhs.reg, c = mirror(c);
        if (last) {
          emit(uint8_t((with_k ? kLtK : kLt) + uint8_t(c)), d, a, b, k);
        } else {
          jumps.push_back(emit(with_k ? kChainK : kChain, d, a, b, k, uint8_t(c)));
        }
        runtime = true;
      }
      lhs = rhs;
    }
    for (size_t j : jumps) land(j);
    if (!runtime) {
      sp_ = base;
      return K(value);
    }
    sp_ = want >= 0 ? base : base + 1;
    return R(d);
  }

  Expr& e_;
  int sp_, max_;
};

Expr::Expr(const std::string& text, const std::vector<std::string>& names) : text_(text) {
  ExprParser(*this, names).parse();
  ExprCompiler(*this).compile();
}

// Expr::eval's dispatch.  GCC and Clang: one indirect jump per opcode (threaded
// code), which the branch predictor tells apart far better than a single
// switch; with AOE_EXPR_SWITCH defined, the same bodies run in a switch.  (The
// bodies use GCC's __builtin_*_overflow, so either way it takes GCC or Clang.)
// Macros know no namespace: these are #undef'd after Expr::eval.
#if defined(__GNUC__) && !defined(AOE_EXPR_SWITCH)
#define AOE_EXPR_THREADED
#define AOE_NEXT           \
  do {                     \
    in = ip++;             \
    goto* kLabels[in->op]; \
  } while (0)
#define AOE_OP(c) op_##c:
#else
#define AOE_NEXT break
#define AOE_OP(c) case c:
#endif

namespace {

// The registers of a run, the parameters' values loaded: `local` when
// `count` fit in it, else a block that `heap` then owns.
template <size_t N>
int64_t* load_registers(int64_t (&local)[N], std::unique_ptr<int64_t[]>& heap, int count,
                        const std::vector<int>& params, const int64_t* values) {
  int64_t* r = local;
  if (count > int(N)) {
    heap.reset(new int64_t[size_t(count)]);
    r = heap.get();
  }
  for (size_t i = 0; i < params.size(); ++i) r[i] = values[params[i]];
  return r;
}

}  // namespace

// Runs the bytecode; an undefined step ends the run at once.  The opcode
// bodies stay in this one function: with the dispatch loop in a function of
// its own (which GCC does not inline, as it holds a computed goto) restriction
// checks ran at 0.8x, and even folding kDiv/kMod into helpers measured 0.95x
// (bench/bench_ab_restrictions.py).
int64_t Expr::eval(const int64_t* values, bool* undefined) const {
  int64_t local[64];  // registers on the stack; longer programs take a heap block
  std::unique_ptr<int64_t[]> heap;
  int64_t* const r = load_registers(local, heap, registers_, params_, values);
  const Ins* const code = code_.data();
  const Ins* ip = code;
  const Ins* in;
  bool undef = false;
  int64_t v = 0;
#ifdef AOE_EXPR_THREADED
  static const void* const kLabels[] = {
      &&op_kRet, &&op_kRetK, &&op_kUndef, &&op_kLoadK, &&op_kMov, &&op_kNeg, &&op_kNot,
      &&op_kAdd, &&op_kSub, &&op_kMul, &&op_kDiv, &&op_kMod, &&op_kPow,
      &&op_kAddK, &&op_kSubK, &&op_kMulK, &&op_kDivK, &&op_kModK, &&op_kShrK, &&op_kAndK,
      &&op_kLt, &&op_kLe, &&op_kGt, &&op_kGe, &&op_kEq, &&op_kNe,
      &&op_kLtK, &&op_kLeK, &&op_kGtK, &&op_kGeK, &&op_kEqK, &&op_kNeK,
      &&op_kChain, &&op_kChainK, &&op_kOrCmp, &&op_kOrCmpK, &&op_kJz, &&op_kJnz};
  static_assert(sizeof(kLabels) / sizeof(kLabels[0]) == kJnz + 1, "one label per opcode");
  AOE_NEXT;
#else
  for (;;) {
    in = ip++;
    switch (in->op) {
#endif
  AOE_OP(kRet) v = r[in->a]; goto done;
  AOE_OP(kRetK) v = in->k; goto done;
  AOE_OP(kUndef) goto undefined;
  AOE_OP(kLoadK) r[in->d] = in->k; AOE_NEXT;
  AOE_OP(kMov) r[in->d] = r[in->a]; AOE_NEXT;
  AOE_OP(kNeg) if (__builtin_sub_overflow(int64_t(0), r[in->a], &r[in->d])) goto undefined; AOE_NEXT;
  AOE_OP(kNot) r[in->d] = r[in->a] == 0; AOE_NEXT;
  AOE_OP(kAdd) if (__builtin_add_overflow(r[in->a], r[in->b], &r[in->d])) goto undefined; AOE_NEXT;
  AOE_OP(kSub) if (__builtin_sub_overflow(r[in->a], r[in->b], &r[in->d])) goto undefined; AOE_NEXT;
  AOE_OP(kMul) if (__builtin_mul_overflow(r[in->a], r[in->b], &r[in->d])) goto undefined; AOE_NEXT;
  AOE_OP(kAddK) if (__builtin_add_overflow(r[in->a], in->k, &r[in->d])) goto undefined; AOE_NEXT;
  AOE_OP(kSubK) if (__builtin_sub_overflow(r[in->a], in->k, &r[in->d])) goto undefined; AOE_NEXT;
  AOE_OP(kMulK) if (__builtin_mul_overflow(r[in->a], in->k, &r[in->d])) goto undefined; AOE_NEXT;
  AOE_OP(kDiv) {
    const int64_t b = r[in->b];
    if (b == 0) goto undefined;
    r[in->d] = floor_div(r[in->a], b, &undef);
    if (undef) goto undefined;
    AOE_NEXT;
  }
  AOE_OP(kMod) {
    const int64_t b = r[in->b];
    if (b == 0) goto undefined;
    r[in->d] = floor_mod(r[in->a], b);
    AOE_NEXT;
  }
  AOE_OP(kDivK) r[in->d] = floor_div(r[in->a], in->k, &undef); if (undef) goto undefined; AOE_NEXT;
  AOE_OP(kModK) r[in->d] = floor_mod(r[in->a], in->k); AOE_NEXT;
  AOE_OP(kShrK) r[in->d] = r[in->a] >> in->k; AOE_NEXT;
  AOE_OP(kAndK) r[in->d] = r[in->a] & in->k; AOE_NEXT;
  AOE_OP(kPow) r[in->d] = power(r[in->a], r[in->b], &undef); if (undef) goto undefined; AOE_NEXT;
  AOE_OP(kLt) r[in->d] = r[in->a] < r[in->b]; AOE_NEXT;
  AOE_OP(kLe) r[in->d] = r[in->a] <= r[in->b]; AOE_NEXT;
  AOE_OP(kGt) r[in->d] = r[in->a] > r[in->b]; AOE_NEXT;
  AOE_OP(kGe) r[in->d] = r[in->a] >= r[in->b]; AOE_NEXT;
  AOE_OP(kEq) r[in->d] = r[in->a] == r[in->b]; AOE_NEXT;
  AOE_OP(kNe) r[in->d] = r[in->a] != r[in->b]; AOE_NEXT;
  AOE_OP(kLtK) r[in->d] = r[in->a] < in->k; AOE_NEXT;
  AOE_OP(kLeK) r[in->d] = r[in->a] <= in->k; AOE_NEXT;
  AOE_OP(kGtK) r[in->d] = r[in->a] > in->k; AOE_NEXT;
  AOE_OP(kGeK) r[in->d] = r[in->a] >= in->k; AOE_NEXT;
  AOE_OP(kEqK) r[in->d] = r[in->a] == in->k; AOE_NEXT;
  AOE_OP(kNeK) r[in->d] = r[in->a] != in->k; AOE_NEXT;
  AOE_OP(kChain)
    if (!compare(Cmp(in->cmp), r[in->a], r[in->b])) r[in->d] = 0, ip = code + in->j;
    AOE_NEXT;
  AOE_OP(kChainK)
    if (!compare(Cmp(in->cmp), r[in->a], in->k)) r[in->d] = 0, ip = code + in->j;
    AOE_NEXT;
  AOE_OP(kOrCmp)
    if (compare(Cmp(in->cmp), r[in->a], r[in->b])) r[in->d] = 1, ip = code + in->j;
    AOE_NEXT;
  AOE_OP(kOrCmpK)
    if (compare(Cmp(in->cmp), r[in->a], in->k)) r[in->d] = 1, ip = code + in->j;
    AOE_NEXT;
  AOE_OP(kJz)
    r[in->d] = r[in->a];
    if (r[in->d] == 0) ip = code + in->j;
    AOE_NEXT;
  AOE_OP(kJnz)
    r[in->d] = r[in->a];
    if (r[in->d] != 0) ip = code + in->j;
    AOE_NEXT;
#ifndef AOE_EXPR_THREADED
    }
  }
#endif
undefined:
  undef = true;
  v = 0;
done:
  if (undefined) *undefined = undef;
  return v;
}

#undef AOE_NEXT
#undef AOE_OP
#undef AOE_EXPR_THREADED

}  // namespace aoe
