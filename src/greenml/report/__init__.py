"""Reports built from stored runs: one document model, rendered as Markdown, HTML or JSON."""
