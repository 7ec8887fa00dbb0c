vllm serve /data3/zyh/workspace/wspo/qwen_models/qwen2.5-1.5B-wspo \
    --tensor-parallel-size 2 \
    --host 127.0.0.1 \
    --port 6006 \
    --served-model-name qwen2.5-1.5B-wspo \
    --api-key xxx \
    --gpu-memory-utilization 0.95 \
    --max_model_len 8192 \
    --enforce-eager
