"""tools/mutants.py's matching of an edit against a solution: letter for letter where it can,
else token for token across white space, line breaks and comments, so that reformatting a
solution (clang-format) or re-commenting it does not orphan a mutant."""
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
import mutants  # noqa: E402

SOLUTION = """__global__ void k(const float* in, float* out, int n) {
  // one thread per element
  const int i = blockIdx.x * blockDim.x +
                threadIdx.x;  // reformatted over two lines
  if (i < n) out[i] = in[i];
}
"""


class FindEdit(unittest.TestCase):
    def test_letter_for_letter_first(self):
        old = "  if (i < n) out[i] = in[i];\n"
        start, end = mutants.find_edit(SOLUTION, old)
        self.assertEqual(SOLUTION[start:end], old)

    def test_across_a_line_break_and_a_comment(self):
        text, missing = mutants.apply(SOLUTION, [("  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n",
                                                  "  const int i = threadIdx.x;\n")])
        self.assertIsNone(missing)
        self.assertIn("  const int i = threadIdx.x;  // reformatted over two lines\n", text)
        self.assertNotIn("blockIdx.x", text)

    def test_a_comment_in_the_edit_is_not_required(self):
        text, missing = mutants.apply(SOLUTION, [("if (i < n) /* bounds */ out[i] = in[i];", "out[i] = in[i];")])
        self.assertIsNone(missing)
        self.assertIn("  out[i] = in[i];\n", text)

    def test_gone_text_is_reported(self):
        text, missing = mutants.apply(SOLUTION, [("if (i <= n)", "if (true)")])
        self.assertIsNone(text)
        self.assertEqual(missing, "if (i <= n)")

    def test_a_string_is_one_token(self):
        self.assertEqual(mutants.code_tokens('s = "// kept"; // gone'), ["s", "=", '"// kept"', ";"])


if __name__ == "__main__":
    unittest.main()
