"""How a model string's provider can be told to be wrong before a run starts, without
importing litellm (2-4 s) in the run's process: litellm's provider names (``provider_list``
of the pinned litellm 1.110.2; ``tests/llm/test_preflight.py`` compares them with the
installed litellm's, so the copy cannot go stale unnoticed)."""

LITELLM_PROVIDERS = frozenset(
    """
    a2a a2a_agent abliteration ai21 ai21_chat aiand aiml aiohttp_openai amazon_nova
    anthropic anthropic_text apertis assemblyai auto_router aws_polly aws_textract azure
    azure_ai azure_speech azure_text baseten bedrock bedrock_mantle bespoke bigmodel
    black_forest_labs bytez cerebras charity_engine chatgpt chutes clarifai
    clf_ai_gateway cloudflare codestral cognition cohere cohere_chat cometapi
    compactifai coralbricks cortecs cursor custom custom_openai darkbloom dashscope
    databricks databricks_agent datarobot deepgram deepinfra deepseek
    docker_model_runner dotprompt edenai elevenlabs empiriolabs empower eu_jev fal_ai
    featherless_ai fireworks_ai friendliai galadriel gdc gemini gigachat github
    github_copilot gradient_ai groq helicone heroku hosted_vllm hostinger_router
    huggingface humanloop hyperbolic inception inferenceapis infinity jina_ai kyma
    lambda_ai langflow langfuse langgraph laya lemonade libertai litellm_agent
    litellm_proxy llamafile lm_studio manus maritalk meta meta_llama
    microsoft_365_copilot milvus minimax mistral modelscope mongodb moonshot morph nace
    nadir nano-gpt nebius neosantara nlp_cloud novita nscale nvidia_nim nvidia_riva oci
    ollama ollama_chat oobabooga openai openai_like opencode_go openinfer openrouter
    opensearch ovhcloud parallel_ai parasail perplexity petals pg_vector pinstripes poe
    predibase prism publicai qwen_ai_platform qwencloud ragflow recraft reducto
    refuseless reka replicate runwayml s3_vectors sagemaker sagemaker_chat
    sagemaker_nova sail sambanova sap scaledown scaleway scx-ai snowflake soniox
    stability strands_decider streamlake synthetic tencent tensormesh text-completion-
    codestral text-completion-inception text-completion-openai together_ai topaz
    transcribe triton typesafe v0 valkey vercel_ai_gateway vertex_ai vertex_ai_beta vllm
    volcengine voyage wally wandb watsonx watsonx_text xai xiaomi_mimo xinference zai
    zerogpu
    """.split()
)
