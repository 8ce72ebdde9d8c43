"""The measurement contract: what to measure (`request`), which engine and what each
declares (`engine`), the engines' own result fields (`fields`), the result (`result`),
the child's protocol (`protocol`), which estimate a peak is held against
(`comparison`), the history of runs (`history`) and their text (`report`)."""
