"""One module per group of operations; `ragraf.api.index.Index` composes them."""
