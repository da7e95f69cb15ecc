-- Headless Neovim (0.7+) as a real lensmux client: start the configured
-- server command, ask for symbols and a definition, report, wait, quit.
local out_path = os.getenv("PROBE_OUT")
local release_path = os.getenv("PROBE_RELEASE")
local root = os.getenv("PROBE_ROOT")

local function write(tbl)
  local f = assert(io.open(out_path, "w"))
  f:write(vim.fn.json_encode(tbl))
  f:close()
end

local ok, err = pcall(function()
  local client_id = vim.lsp.start_client({
    name = "clangd-via-lensmux",
    cmd = { "lensmux", "client", "clangd" },
    root_dir = root,
  })
  assert(client_id, "start_client failed")
  vim.lsp.buf_attach_client(0, client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  assert(vim.wait(30000, function() return client.initialized end, 50), "not initialized")
  local uri = vim.uri_from_bufnr(0)
  local symbols = vim.lsp.buf_request_sync(0, "textDocument/documentSymbol", { textDocument = { uri = uri } }, 30000)
  local names = {}
  for _, res in pairs(symbols or {}) do
    for _, sym in ipairs(res.result or {}) do table.insert(names, sym.name) end
  end
  -- `add` is called on line 4 (0-based 3) of src/main.c at column 17.
  local defs = vim.lsp.buf_request_sync(0, "textDocument/definition",
    { textDocument = { uri = uri }, position = { line = 3, character = 17 } }, 30000)
  local targets = {}
  for _, res in pairs(defs or {}) do
    for _, loc in ipairs(res.result or {}) do table.insert(targets, loc.uri or loc.targetUri) end
  end
  write({ status = "ready", symbols = names, definitions = targets, server = client.name })
  vim.wait(60000, function() return vim.loop.fs_stat(release_path) ~= nil end, 50)
  vim.lsp.stop_client(client_id)
  vim.wait(5000, function() return client.is_stopped() end, 50)
end)
if not ok then write({ status = "error", error = tostring(err) }) end
vim.cmd("qall!")
