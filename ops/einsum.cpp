// einsum: the equation parsed into integer labels per dim, then each operand's diagonals and
// lone dims reduced, then the operands contracted pairwise by bmm (Note [Einsum contraction]).
#include "minidl/ops/einsum.h"

#include <algorithm>
#include <string>

#include "minidl/core/profiler.h"
#include "minidl/ops/linalg.h"
#include "minidl/ops/reduce.h"
#include "minidl/ops/shape.h"

namespace minidl {

namespace {

// Labels: 'A'-'Z' are 0-25 and 'a'-'z' 26-51 (so sorting them sorts as PyTorch's implicit
// output), and the k-th dim of the broadcast "..." is kEllipsisLabel + k.
constexpr int kLetterLabels = 52;
constexpr int kEllipsisLabel = kLetterLabels;

using Labels = std::vector<int>;

// One side of the arrow, per term: its labels, where "..." was (or -1) and how many letters.
struct Term {
  std::vector<int> letters;  // letter labels in order, with the ellipsis left out
  int ellipsis_at = -1;      // how many letters come before "..." (-1: no ellipsis)
};

std::string quoted(std::string_view equation) {
  std::string text(1, '"');  // appended piecewise: GCC 12 warns (-Wrestrict) on "\"" + string
  text.append(equation);
  text.push_back('"');
  return text;
}

char subscript_of(int label) {
  return static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26));
}

// Parses one comma-free term; `where` names it in errors ("operand 1", "the output").
Term parse_term(std::string_view text, std::string_view equation, const std::string& where) {
  Term term;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ') continue;
    if (c == '.') {
      MINIDL_CHECK(text.substr(i, 3) == "..." && term.ellipsis_at < 0, "einsum: equation ",
                   quoted(equation), " has a '.' in ", where,
                   " that is not part of one \"...\" (at most one per term)");
      term.ellipsis_at = static_cast<int>(term.letters.size());
      i += 2;
      continue;
    }
    MINIDL_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), "einsum: invalid subscript '", c,
                 "' in ", where, " of equation ", quoted(equation),
                 "; subscripts are letters a-z, A-Z and \"...\"");
    term.letters.push_back(c >= 'a' ? 26 + (c - 'a') : c - 'A');
  }
  return term;
}

// The term's labels for a tensor whose "..." covers `ellipsis_dims` of the broadcast
// `total_ellipsis` dims (right-aligned).
Labels expand_term(const Term& term, int64_t ellipsis_dims, int64_t total_ellipsis) {
  Labels labels(term.letters.begin(), term.letters.end());
  if (term.ellipsis_at >= 0) {
    Labels ellipsis;
    for (int64_t k = total_ellipsis - ellipsis_dims; k < total_ellipsis; ++k)
      ellipsis.push_back(kEllipsisLabel + static_cast<int>(k));
    labels.insert(labels.begin() + term.ellipsis_at, ellipsis.begin(), ellipsis.end());
  }
  return labels;
}

int64_t position_of(const Labels& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) - labels.begin();
}

bool contains(const Labels& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// An operand with one label per dim.
struct Labelled {
  Tensor tensor;
  Labels labels;
};

// The diagonal over every label the operand repeats: for dims p < q with one label, the pair
// is moved last, flattened, and the elements k * (n + 1) kept, leaving one dim at the end.
Labelled take_diagonals(Labelled x, size_t operand, std::string_view equation) {
  for (size_t p = 0; p < x.labels.size(); ++p) {
    for (size_t q = p + 1; q < x.labels.size();) {
      if (x.labels[q] != x.labels[p]) {
        ++q;
        continue;
      }
      const int64_t n = x.tensor.size(static_cast<int64_t>(p));
      MINIDL_CHECK(x.tensor.size(static_cast<int64_t>(q)) == n, "einsum: subscript ",
                   subscript_of(x.labels[p]), " is repeated for operand ", operand, " of equation ",
                   quoted(equation), " but its sizes differ: ", n, " and ",
                   x.tensor.size(static_cast<int64_t>(q)));
      Shape order;
      Labels labels;
      for (size_t d = 0; d < x.labels.size(); ++d) {
        if (d == p || d == q) continue;
        order.push_back(static_cast<int64_t>(d));
        labels.push_back(x.labels[d]);
      }
      order.insert(order.end(), {static_cast<int64_t>(p), static_cast<int64_t>(q)});
      labels.push_back(x.labels[p]);
      Shape flat = x.tensor.sizes();
      flat.erase(flat.begin() + static_cast<int64_t>(q));
      flat.erase(flat.begin() + static_cast<int64_t>(p));
      flat.push_back(n * n);
      std::vector<int64_t> diagonal(static_cast<size_t>(n));
      for (int64_t k = 0; k < n; ++k) diagonal[static_cast<size_t>(k)] = k * (n + 1);
      const Tensor positions = from_host(diagonal.data(), {n}, kInt64).to(x.tensor.device());
      x.tensor = index_select(x.tensor.permute(order).reshape(flat), x.tensor.dim() - 2, positions);
      x.labels = labels;
      p = static_cast<size_t>(-1);  // the dims moved: start again
      break;
    }
  }
  return x;
}

// Sums over the operand's labels that `keep` does not hold.
Labelled sum_unkept(Labelled x, const Labels& keep) {
  Shape dims;
  Labels labels;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (contains(keep, x.labels[d]))
      labels.push_back(x.labels[d]);
    else
      dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return x;
  return {x.tensor.sum(dims), labels};
}

// Note [Einsum contraction]: a and b, each with unique labels and none that only it needs,
// become one tensor. The labels both hold are batch dims when `keep` (the output and the
// later operands) holds them, else summed; the others stay. a is laid out [batch, a's own,
// summed] and b [batch, summed, b's own], each flattened to 3-D, and bmm gives [batch, a's
// own, b's own]. A shared dim of size 1 on one side is expanded to the other's size first.
Labelled contract(Labelled a, Labelled b, const Labels& keep) {
  Labels needed_by_a = keep, needed_by_b = keep;
  needed_by_a.insert(needed_by_a.end(), b.labels.begin(), b.labels.end());
  needed_by_b.insert(needed_by_b.end(), a.labels.begin(), a.labels.end());
  a = sum_unkept(std::move(a), needed_by_a);
  b = sum_unkept(std::move(b), needed_by_b);
  Labels batch, summed, a_own, b_own;
  for (int label : a.labels)
    (contains(b.labels, label) ? (contains(keep, label) ? batch : summed) : a_own).push_back(label);
  for (int label : b.labels)
    if (!contains(a.labels, label)) b_own.push_back(label);
  Shape a_sizes = a.tensor.sizes(), b_sizes = b.tensor.sizes();
  for (size_t d = 0; d < a.labels.size(); ++d) {
    if (!contains(b.labels, a.labels[d])) continue;
    const auto e = static_cast<size_t>(position_of(b.labels, a.labels[d]));
    a_sizes[d] = b_sizes[e] = std::max(a_sizes[d], b_sizes[e]);
  }
  a.tensor = a.tensor.expand(a_sizes);
  b.tensor = b.tensor.expand(b_sizes);
  const auto layout = [](const Labelled& x, const std::vector<const Labels*>& groups) {
    Shape order, grouped;  // dims in the groups' order; each group's size
    for (const Labels* group : groups) {
      int64_t size = 1;
      for (int label : *group) {
        order.push_back(position_of(x.labels, label));
        size *= x.tensor.size(order.back());
      }
      grouped.push_back(size);
    }
    return x.tensor.permute(order).reshape(grouped);
  };
  const auto sizes_of = [](const Labelled& x, const Labels& labels) {
    Shape sizes;
    for (int label : labels) sizes.push_back(x.tensor.size(position_of(x.labels, label)));
    return sizes;
  };
  Shape result_sizes = sizes_of(a, batch);
  const Shape a_own_sizes = sizes_of(a, a_own), b_own_sizes = sizes_of(b, b_own);
  result_sizes.insert(result_sizes.end(), a_own_sizes.begin(), a_own_sizes.end());
  result_sizes.insert(result_sizes.end(), b_own_sizes.begin(), b_own_sizes.end());
  const Tensor product =
      bmm(layout(a, {&batch, &a_own, &summed}), layout(b, {&batch, &summed, &b_own}));
  Labels labels = batch;
  labels.insert(labels.end(), a_own.begin(), a_own.end());
  labels.insert(labels.end(), b_own.begin(), b_own.end());
  return {product.reshape(result_sizes), labels};
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands) {
  const ProfileScope profile("einsum");  // its operands are a list: no input shapes
  MINIDL_CHECK(!operands.empty(), "einsum: expected at least one operand for equation ",
               quoted(equation));
  for (size_t i = 0; i < operands.size(); ++i) {
    check_defined(operands[i], "einsum", "operand");
    MINIDL_CHECK(
        operands[i].dtype() == operands[0].dtype() && operands[i].device() == operands[0].device(),
        "einsum: expected every operand with operand 0's dtype ", operands[0].dtype(),
        " and device ", operands[0].device(), ", got ", operands[i].dtype(), " on ",
        operands[i].device(), " for operand ", i);
  }
  const size_t arrow = equation.find("->");
  const std::string_view inputs = equation.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    const size_t comma = inputs.find(',', start);
    terms.push_back(parse_term(inputs.substr(start, comma - start), equation,
                               "operand " + std::to_string(terms.size())));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  MINIDL_CHECK(terms.size() == operands.size(), "einsum: equation ", quoted(equation), " has ",
               terms.size(), " operand terms but ", operands.size(), " operands were given");

  // Each operand's labels, with "..." expanded to the dims its letters leave.
  int64_t total_ellipsis = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t letters = static_cast<int64_t>(terms[i].letters.size());
    const int64_t dims = operands[i].dim();
    MINIDL_CHECK(terms[i].ellipsis_at >= 0 ? dims >= letters : dims == letters, "einsum: operand ",
                 i, " has ", dims, " dims (shape ", operands[i].sizes(), ") but equation ",
                 quoted(equation), " gives it ", letters, " subscripts",
                 terms[i].ellipsis_at >= 0 ? " and \"...\"" : " and no \"...\"");
    if (terms[i].ellipsis_at >= 0) total_ellipsis = std::max(total_ellipsis, dims - letters);
  }
  std::vector<Labelled> labelled;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t ellipsis_dims = operands[i].dim() - static_cast<int64_t>(terms[i].letters.size());
    labelled.push_back({operands[i], expand_term(terms[i], ellipsis_dims, total_ellipsis)});
  }

  // Every label's size agrees across the operands, up to broadcasting a 1.
  std::vector<int64_t> label_size(static_cast<size_t>(kLetterLabels + total_ellipsis), -1);
  for (size_t i = 0; i < labelled.size(); ++i) {
    for (size_t d = 0; d < labelled[i].labels.size(); ++d) {
      int64_t& seen = label_size[static_cast<size_t>(labelled[i].labels[d])];
      const int64_t size = labelled[i].tensor.size(static_cast<int64_t>(d));
      const int label = labelled[i].labels[d];
      const int64_t first = position_of(labelled[i].labels, label);
      MINIDL_CHECK(first == static_cast<int64_t>(d) || labelled[i].tensor.size(first) == size,
                   "einsum: subscript ", subscript_of(label), " is repeated for operand ", i,
                   " of equation ", quoted(equation),
                   " but its sizes differ: ", labelled[i].tensor.size(first), " and ", size);
      MINIDL_CHECK(seen < 0 || seen == size || seen == 1 || size == 1,
                   "einsum: ", label < kLetterLabels ? "subscript " : "a \"...\" dim",
                   label < kLetterLabels ? std::string(1, subscript_of(label)) : std::string(),
                   " has size ", size, " in operand ", i, " of equation ", quoted(equation),
                   ", which does not broadcast with the size ", seen, " seen before");
      if (seen <= 1) seen = size;
    }
  }

  // The output's labels: explicit after "->", else the "..." dims and the lone letters.
  Labels output;
  if (arrow != std::string_view::npos) {
    const Term term = parse_term(equation.substr(arrow + 2), equation, "the output");
    for (size_t i = 0; i < term.letters.size(); ++i) {
      const int label = term.letters[i];
      MINIDL_CHECK(std::count(term.letters.begin(), term.letters.end(), label) == 1,
                   "einsum: output subscript ", subscript_of(label), " appears more than once in ",
                   "equation ", quoted(equation));
      MINIDL_CHECK(label_size[static_cast<size_t>(label)] >= 0, "einsum: output subscript ",
                   subscript_of(label), " of equation ", quoted(equation),
                   " appears in no operand");
    }
    output = expand_term(term, term.ellipsis_at >= 0 ? total_ellipsis : 0, total_ellipsis);
  } else {
    for (int64_t k = 0; k < total_ellipsis; ++k)
      output.push_back(kEllipsisLabel + static_cast<int>(k));
    for (int label = 0; label < kLetterLabels; ++label) {
      int64_t count = 0;
      for (const Labelled& x : labelled)
        count += std::count(x.labels.begin(), x.labels.end(), label);
      if (count == 1) output.push_back(label);
    }
  }

  // Diagonals first; then each operand's dims that neither the output nor another operand
  // needs are summed; then the operands are contracted left to right.
  for (size_t i = 0; i < labelled.size(); ++i) {
    labelled[i] = take_diagonals(std::move(labelled[i]), i, equation);
    Labels needed = output;
    for (size_t j = 0; j < labelled.size(); ++j)
      if (j != i) needed.insert(needed.end(), labelled[j].labels.begin(), labelled[j].labels.end());
    labelled[i] = sum_unkept(std::move(labelled[i]), needed);
  }
  Labelled result = labelled[0];
  for (size_t i = 1; i < labelled.size(); ++i) {
    Labels keep = output;
    for (size_t j = i + 1; j < labelled.size(); ++j)
      keep.insert(keep.end(), labelled[j].labels.begin(), labelled[j].labels.end());
    result = contract(std::move(result), labelled[i], keep);
  }
  result = sum_unkept(std::move(result), output);
  // A broadcast dim of size 1 that met no larger one is still 1 here; the output's order.
  Shape order;
  for (int label : output) order.push_back(position_of(result.labels, label));
  return result.tensor.permute(order);
}

}  // namespace minidl
