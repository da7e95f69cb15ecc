"""The int8 model users get stays close to float32 and ranks code by meaning."""

from __future__ import annotations

import numpy as np
import pytest

from lensmux.graph.embedding.embedder import Embedder

pytestmark = pytest.mark.slow

SAMPLE = [
    "def backoff_send(payload, retries=5): sleep(2 ** attempt) before retrying the upload",
    "retry failed uploads with exponential backoff",
    "class LruCache: evicts the least recently used entry when full",
    "The quick brown fox jumps over the lazy dog.",
    "int main(int argc, char **argv) { return parse_args(argc, argv); }",
    "Parse the JSON-RPC header and read exactly Content-Length bytes.",
    "SELECT name, email FROM users WHERE created_at > NOW() - INTERVAL '7 days';",
    "The daemon restarts a language server after three crashes within a minute.",
    "public async Task<IActionResult> GetUser(int id) => Ok(await _repo.Find(id));",
    "How do I configure clangd to find compile_commands.json?",
    "for (auto& item : items) { total += item.price * item.quantity; }",
    "Louvain community detection groups functions that call each other.",
    "import numpy as np; x = np.linalg.norm(v, axis=1)",
    "A hash map stores key-value pairs with constant average lookup time.",
    'fn main() { println!("hello"); }',
    "Tokenize the input text and pad the batch to the longest sequence.",
    "git rebase -i HEAD~3 squashes the last three commits",
    "Weather forecast: light rain in the afternoon, clearing by evening.",
    'async def read_message(stream): header = await stream.receive_until(b"\\r\\n\\r\\n", 4096)',
    "PageRank scores nodes by the stationary distribution of a random walk.",
    "throw new ArgumentNullException(nameof(path));",
    "She sold the old bicycle to buy a new guitar.",
    'if err != nil { return fmt.Errorf("open %s: %w", path, err) }',
    "Cosine similarity between normalised vectors equals their dot product.",
    "const debounce = (fn, ms) => { let t; return (...a) => { clearTimeout(t); "
    "t = setTimeout(() => fn(...a), ms); }; };",
    "The build failed because the linker could not find libssl.",
    "std::unique_ptr<Node> left, right;",
    "Write the manifest atomically: temp file, fsync, rename, fsync the directory.",
    "The museum opens at nine and closes at five on weekdays.",
    "def walk(root):\n    for dirpath, dirnames, filenames in os.walk(root):\n"
    "        dirnames[:] = [d for d in dirnames if not d.startswith('.')]\n"
    "        yield from (os.path.join(dirpath, f) for f in filenames)",
]

BACKOFF = """def backoff_send(client, payload, retries=6):
    delay = 0.5
    for attempt in range(retries):
        try:
            return client.upload(payload)
        except (TimeoutError, ConnectionError):
            time.sleep(delay)
            delay *= 2
    raise UploadFailed(payload.id)
"""

UNRELATED = [
    """def render_table(rows):
    html = ["<table>"]
    for row in rows:
        html.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return "".join(html) + "</table>"
""",
    """class Matrix:
    def transpose(self):
        return Matrix([list(col) for col in zip(*self.rows)])
""",
    """def parse_date(text):
    year, month, day = map(int, text.split("-"))
    return datetime.date(year, month, day)
""",
]


def test_int8_model_agrees_with_float32(fp32_embedder: Embedder, int8_embedder: Embedder) -> None:
    fp32 = fp32_embedder.embed(SAMPLE)
    int8 = int8_embedder.embed(SAMPLE)
    cosines = (fp32 * int8).sum(axis=1)  # both are unit vectors
    assert len(SAMPLE) == 30
    assert float(cosines.mean()) >= 0.99
    assert float(cosines.min()) >= 0.95


def test_int8_vectors_are_unit_length(int8_embedder: Embedder) -> None:
    vectors = int8_embedder.embed(SAMPLE)
    assert vectors.shape == (len(SAMPLE), int8_embedder.dim) == (30, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_query_is_closest_to_the_snippet_that_does_it(
    precision: str, fp32_embedder: Embedder, int8_embedder: Embedder
) -> None:
    embedder = int8_embedder if precision == "int8" else fp32_embedder
    query = embedder.embed_query("retry failed uploads with exponential backoff")
    snippets = embedder.embed([BACKOFF, *UNRELATED])
    scores = snippets @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] - scores[1:].max() > 0.1
