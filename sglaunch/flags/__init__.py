"""sglang's flag schema, the argv parser and the launch-line reader."""
