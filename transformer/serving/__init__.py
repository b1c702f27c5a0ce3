"""How requests meet the model in the app: the batcher (`batching`), the search process (`search_process`) and the
serving path measured at start (`kernels`). The core and training never import it (.importlinter)."""
