// Testbench for the generated Engine top (target/hdl/engine.v, 4 channels).
//
// Reads one line per clock from +vectors=<file> (hex):
//   nfc_start[3:0] nfc_valid[3:0] nfc_data0..3 (128-bit beats) q_we q_kernel q_addr q_data
//   topk_valid topk_key topk_flush awvalid awaddr wvalid wdata
//   wstrb bready arvalid araddr rready
// applies it, gives one rising edge, and after the edge (the sampling point
// of hdl::sim::tick) writes one line per clock to +out=<file> (hex):
//   awready wready bvalid bresp arready rvalid rdata rresp
//   out0_valid o0..o7 out1_valid p0..p7 topk_out_valid topk_out_index irq
// with each payload zeroed while its valid is low, then "end <clocks>".
// tests/verilog_cosim.rs compares it line for line with
// hdl::engine::cosim (the rust-hdl run) and attention::engine::dense_group.
`timescale 1ns / 1ps
module engine_tb;
    reg clock = 1'b0;
    reg [3:0] nfc_start = 4'd0, nfc_valid = 4'd0;
    reg [127:0] nd0 = 128'd0, nd1 = 128'd0, nd2 = 128'd0, nd3 = 128'd0;
    reg q_we = 1'b0;
    reg q_kernel = 1'b0;
    reg [7:0] q_addr = 8'd0;
    reg [31:0] q_data = 32'd0;
    reg topk_valid = 1'b0;
    reg [63:0] topk_key = 64'd0;
    reg topk_flush = 1'b0;
    reg awvalid = 1'b0, wvalid = 1'b0, bready = 1'b0, arvalid = 1'b0, rready = 1'b0;
    reg [11:0] awaddr = 12'd0, araddr = 12'd0;
    reg [31:0] wdata = 32'd0;
    reg [3:0] wstrb = 4'd0;
    wire awready, wready, bvalid, arready, rvalid;
    wire [1:0] bresp, rresp;
    wire [31:0] rdata;
    wire out0_valid, out1_valid, topk_out_valid, irq;
    wire [31:0] o0, o1, o2, o3, o4, o5, o6, o7;
    wire [31:0] p0, p1, p2, p3, p4, p5, p6, p7;
    wire [31:0] topk_out_index;

    engine dut (
        .clock(clock),
        .nfc_start$0(nfc_start[0]), .nfc_start$1(nfc_start[1]),
        .nfc_start$2(nfc_start[2]), .nfc_start$3(nfc_start[3]),
        .nfc_valid$0(nfc_valid[0]), .nfc_valid$1(nfc_valid[1]),
        .nfc_valid$2(nfc_valid[2]), .nfc_valid$3(nfc_valid[3]),
        .nfc_data$0(nd0), .nfc_data$1(nd1), .nfc_data$2(nd2), .nfc_data$3(nd3),
        .q_we(q_we), .q_kernel(q_kernel), .q_addr(q_addr), .q_data(q_data),
        .out0_valid(out0_valid),
        .out0_data$0(o0), .out0_data$1(o1), .out0_data$2(o2), .out0_data$3(o3),
        .out0_data$4(o4), .out0_data$5(o5), .out0_data$6(o6), .out0_data$7(o7),
        .out1_valid(out1_valid),
        .out1_data$0(p0), .out1_data$1(p1), .out1_data$2(p2), .out1_data$3(p3),
        .out1_data$4(p4), .out1_data$5(p5), .out1_data$6(p6), .out1_data$7(p7),
        .topk_valid(topk_valid), .topk_key(topk_key),
        .topk_flush(topk_flush), .topk_out_valid(topk_out_valid),
        .topk_out_index(topk_out_index), .irq(irq),
        .s_axi_awvalid(awvalid), .s_axi_awready(awready), .s_axi_awaddr(awaddr),
        .s_axi_wvalid(wvalid), .s_axi_wready(wready), .s_axi_wdata(wdata),
        .s_axi_wstrb(wstrb), .s_axi_bvalid(bvalid), .s_axi_bready(bready),
        .s_axi_bresp(bresp), .s_axi_arvalid(arvalid), .s_axi_arready(arready),
        .s_axi_araddr(araddr), .s_axi_rvalid(rvalid), .s_axi_rready(rready),
        .s_axi_rdata(rdata), .s_axi_rresp(rresp)
    );

    integer fin, fout, n, t;
    reg [8*1024-1:0] vec_path, out_path;

    task read_line;
        n = $fscanf(fin, "%h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h %h\n",
                    nfc_start, nfc_valid, nd0, nd1, nd2, nd3, q_we, q_kernel, q_addr, q_data,
                    topk_valid, topk_key, topk_flush, awvalid, awaddr, wvalid, wdata,
                    wstrb, bready, arvalid, araddr, rready);
    endtask

    initial begin
        if (!$value$plusargs("vectors=%s", vec_path) || !$value$plusargs("out=%s", out_path)) begin
            $display("usage: +vectors=<file> +out=<file>");
            $finish;
        end
        fin = $fopen(vec_path, "r");
        fout = $fopen(out_path, "w");
        if (fin == 0 || fout == 0) begin
            $display("cannot open vector or output file");
            $finish;
        end
        t = 0;
        read_line;
        while (n == 22) begin
            #1 clock = 1'b1;
            #1 clock = 1'b0;
            $fwrite(fout, "%h %h %h %h %h %h %h %h", awready, wready, bvalid,
                    bvalid ? bresp : 2'd0, arready, rvalid, rvalid ? rdata : 32'd0,
                    rvalid ? rresp : 2'd0);
            if (out0_valid)
                $fwrite(fout, " 1 %h %h %h %h %h %h %h %h", o0, o1, o2, o3, o4, o5, o6, o7);
            else
                $fwrite(fout, " 0 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000");
            if (out1_valid)
                $fwrite(fout, " 1 %h %h %h %h %h %h %h %h", p0, p1, p2, p3, p4, p5, p6, p7);
            else
                $fwrite(fout, " 0 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000");
            $fwrite(fout, " %h %h %h\n", topk_out_valid,
                    topk_out_valid ? topk_out_index : 32'd0, irq);
            t = t + 1;
            read_line;
        end
        $fwrite(fout, "end %0d\n", t);
        $fclose(fout);
        $finish;
    end
endmodule
