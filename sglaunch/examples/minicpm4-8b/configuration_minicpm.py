"""A MiniCPM 4 configuration class, written for sglaunch's bundled example.

Real MiniCPM checkpoints ship their own `configuration_minicpm.py` behind
`auto_map`, which is why sglang needs `--trust-remote-code` for them. sglaunch
never runs this file itself; sglang's resolution (the oracle) imports it only
when the user turns on `--trust-remote-code`, as sglang would.
"""

from transformers import PretrainedConfig


class MiniCPMConfig(PretrainedConfig):
    model_type = "minicpm"

    def __init__(
        self,
        vocab_size=73448,
        hidden_size=4096,
        intermediate_size=16384,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=2,
        hidden_act="silu",
        max_position_embeddings=32768,
        initializer_range=0.1,
        rms_norm_eps=1e-6,
        use_cache=True,
        rope_theta=10000.0,
        rope_scaling=None,
        scale_emb=12,
        dim_model_base=256,
        scale_depth=1.4,
        **kwargs,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.num_key_value_heads = num_key_value_heads
        self.hidden_act = hidden_act
        self.max_position_embeddings = max_position_embeddings
        self.initializer_range = initializer_range
        self.rms_norm_eps = rms_norm_eps
        self.use_cache = use_cache
        self.rope_theta = rope_theta
        self.rope_scaling = rope_scaling
        self.scale_emb = scale_emb
        self.dim_model_base = dim_model_base
        self.scale_depth = scale_depth
        super().__init__(**kwargs)
