python tensorrt_llm/examples/gpt/convert_checkpoint.py --model_dir /model/starcoder2-3b --output_dir starcoder2_3b_output --tp_size 2

trtllm-build --checkpoint_dir starcoder2_3b_output --gpt_attention_plugin float16 --gemm_plugin float16 --remove_input_padding enable --context_fmha enable --output_dir /model/model_repo/tensorrt_llm/1/ --max_beam_width 1 --max_num_tokens 8192 --max_output_len 200 --max_input_len 2038 --max_batch_size 4 --use_fused_mlp --use_paged_context_fmha enable --use_custom_all_reduce disable
