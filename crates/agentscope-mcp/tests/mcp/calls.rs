//! Calls and their results: valid and invalid arguments through a real agent (our schema
//! validation answers invalid ones), every content kind, structured content, `isError`.

use agentscope::prelude::*;
use agentscope::{ImageBlock, ToolResultBlock};
use agentscope_mcp::{McpClient, McpToolResult};
use serde_json::{Value, json};

use crate::support::{self, agent_with_tools, call_tool, calls_then_answers, last_results, reply};

/// Runs one agent call where the model calls `tool` with `input` once, then answers "done";
/// returns the tool result the model read.
async fn result_the_model_reads(client: &McpClient, tool: &str, input: Value) -> ToolResultBlock {
    let model = calls_then_answers("c1", tool, input, "done");
    let agent = agent_with_tools(&model, client);
    assert_eq!(reply(&agent, "go").await.text(), "done");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let mut results = last_results(&requests[1]);
    assert_eq!(results.len(), 1);
    results.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn valid_arguments_reach_the_server_and_invalid_ones_never_do() {
    let Some(client) = support::everything("").await else {
        return;
    };
    assert_eq!(
        result_the_model_reads(&client, "get-sum", json!({"a": 2, "b": 3})).await,
        ToolResultBlock::text("c1", "get-sum", "The sum of 2 and 3 is 5.")
    );
    // Missing and mistyped arguments are answered by the server's own schema, on our side.
    assert_eq!(
        result_the_model_reads(&client, "get-sum", json!({"a": 2})).await,
        ToolResultBlock::error(
            "c1",
            "get-sum",
            "Error: Parameter validation failed for tool 'get-sum': \"b\" is a required property"
        )
    );
    assert_eq!(
        result_the_model_reads(
            &client,
            "get-structured-content",
            json!({"location": "Paris"})
        )
        .await,
        ToolResultBlock::error(
            "c1",
            "get-structured-content",
            "Error: Parameter validation failed for tool 'get-structured-content': /location: \"Paris\" is not one of \"New York\", \"Chicago\" or \"Los Angeles\""
        )
    );
    // Outside an agent nothing validates: the server's own answer is an error result.
    assert_eq!(
        call_tool(&client, "get-sum", json!({"a": 2}))
            .await
            .unwrap(),
        McpToolResult::new(
            vec![ContentBlock::text(
                "MCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected number, received undefined at b"
            )],
            None,
            true
        )
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn content_blocks_map_to_ours() {
    let Some(client) = support::everything("").await else {
        return;
    };
    let image = call_tool(&client, "get-tiny-image", json!({}))
        .await
        .unwrap();
    assert_eq!(image.content.len(), 3);
    assert_eq!(
        image.content[0],
        ContentBlock::text("Here's the image you requested:")
    );
    match &image.content[1] {
        ContentBlock::Image(ImageBlock { url }) => {
            assert!(
                url.starts_with("data:image/png;base64,iVBORw0KGgo"),
                "{url}"
            );
        }
        other => panic!("expected an image, got {other:?}"),
    }
    assert_eq!(
        image.content[2],
        ContentBlock::text("The image above is the MCP logo.")
    );

    let links = call_tool(&client, "get-resource-links", json!({"count": 2}))
        .await
        .unwrap();
    assert_eq!(
        links,
        McpToolResult::new(
            vec![
                ContentBlock::text(
                    "Here are 2 resource links to resources available in this server:"
                ),
                ContentBlock::text(
                    "[resource link: Blob Resource 1 <demo://resource/dynamic/blob/1> (text/plain): Resource 1: plaintext resource]"
                ),
                ContentBlock::text(
                    "[resource link: Text Resource 2 <demo://resource/dynamic/text/2> (text/plain): Resource 2: plaintext resource]"
                ),
            ],
            None,
            false
        )
    );

    let reference = call_tool(&client, "get-resource-reference", json!({}))
        .await
        .unwrap();
    let texts: Vec<&str> = reference
        .content
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect();
    assert_eq!(texts.len(), 3);
    assert_eq!(texts[0], "Returning resource reference for Resource 1:");
    assert!(
        texts[1].starts_with("[resource: demo://resource/dynamic/text/1]\nResource 1: This is a plaintext resource created at "),
        "{}",
        texts[1]
    );
    client.close().await;

    // The kinds server-everything does not send, from the fixture.
    let Some(fixture) = support::fixture("").await else {
        return;
    };
    let mixed = call_tool(&fixture, "mixed-content", json!({}))
        .await
        .unwrap();
    assert_eq!(
        mixed.content,
        vec![
            ContentBlock::text("plain text"),
            ContentBlock::Image(ImageBlock {
                url: "data:image/png;base64,iVBORw0KGgo=".into()
            }),
            ContentBlock::text("[audio omitted: audio/wav]"),
            ContentBlock::text("[resource: file:///notes.txt]\nresource text"),
            ContentBlock::Image(ImageBlock {
                url: "data:image/png;base64,iVBORw0KGgo=".into()
            }),
            ContentBlock::text(
                "[binary resource omitted: file:///data.bin (application/octet-stream)]"
            ),
            ContentBlock::text(
                "[resource link: report <file:///report.pdf> (application/pdf): The report]"
            ),
        ]
    );
    fixture.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn structured_content_is_kept_and_errors_reach_the_model() {
    let Some(client) = support::everything("").await else {
        return;
    };
    let weather = json!({"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82});
    assert_eq!(
        call_tool(
            &client,
            "get-structured-content",
            json!({"location": "Chicago"})
        )
        .await
        .unwrap(),
        McpToolResult::new(
            vec![ContentBlock::text(
                r#"{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}"#
            )],
            Some(weather),
            false
        )
    );
    // The server sent the JSON as text too, so the model reads it once.
    assert_eq!(
        result_the_model_reads(
            &client,
            "get-structured-content",
            json!({"location": "Chicago"})
        )
        .await,
        ToolResultBlock::text(
            "c1",
            "get-structured-content",
            r#"{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}"#
        )
    );
    client.close().await;

    let Some(fixture) = support::fixture("").await else {
        return;
    };
    assert_eq!(
        result_the_model_reads(&fixture, "fail", json!({"why": "disk full"})).await,
        ToolResultBlock::error(
            "c1",
            "fail",
            "Error: Tool execution failed: failed: disk full"
        )
    );
    fixture.close().await;
}

/// server-filesystem sends every result twice: as a text block and as structured content
/// wrapping the same text (`{"content": "<the text>"}`), or, for an image, wrapping the same
/// content blocks (`{"content": [<the blocks>]}`). The model reads each once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(has_node),
    ignore = "Node.js or npm not installed: .ci/run installs them"
)]
async fn structured_content_that_only_repeats_the_content_reaches_the_model_once() {
    let root = tempfile::tempdir().unwrap();
    // The server allows the path as it resolves (no symlinks, as under macOS's /tmp).
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(root_path.join("notes.txt"), "hello\nworld\n").unwrap();
    std::fs::write(root_path.join("pixel.png"), b"\x89PNG\r\n\x1a\n").unwrap();
    let Some(config) = support::filesystem_stdio(&root_path) else {
        return;
    };
    let client = support::connect(config).await;
    let notes = root_path.join("notes.txt").to_string_lossy().into_owned();
    let pixel = root_path.join("pixel.png").to_string_lossy().into_owned();

    // What the server sends: the text twice.
    assert_eq!(
        call_tool(&client, "read_text_file", json!({"path": notes}))
            .await
            .unwrap(),
        McpToolResult::new(
            vec![ContentBlock::text("hello\nworld\n")],
            Some(json!({"content": "hello\nworld\n"})),
            false
        )
    );
    // What the model reads: once.
    assert_eq!(
        result_the_model_reads(&client, "read_text_file", json!({"path": notes})).await,
        ToolResultBlock::text("c1", "read_text_file", "hello\nworld\n")
    );
    assert_eq!(
        result_the_model_reads(&client, "read_file", json!({"path": notes})).await,
        ToolResultBlock::text("c1", "read_file", "hello\nworld\n")
    );
    let image = ContentBlock::Image(ImageBlock {
        url: "data:image/png;base64,iVBORw0KGgo=".into(),
    });
    assert_eq!(
        result_the_model_reads(&client, "read_media_file", json!({"path": pixel})).await,
        ToolResultBlock {
            id: "c1".into(),
            name: "read_media_file".into(),
            output: vec![image],
            is_error: false,
        }
    );
    client.close().await;
}
